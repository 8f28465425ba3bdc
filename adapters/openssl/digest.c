/*
 * digest.c: the provider's one digest implementation, parameterized by
 * algorithm (SHA-256, SHA-1, SHA3-256, MD5).
 *
 * A context accumulates the message until final. At final a message of at
 * least the threshold (isola_prov_min_bytes) goes to isolad as one task and
 * shorter ones are hashed in software. A message that grows past
 * ISOLA_DIGEST_SPILL_BYTES spills to the software twin (an EVP_MD_CTX of
 * the private default provider) and finishes there, as does a context
 * given parameters. So every sequence of init/update/final/dupctx gives
 * the default provider's bytes.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/params.h>

#include "provider.h"

/* The longest message kept for one task; a longer one finishes in software. */
#define ISOLA_DIGEST_SPILL_BYTES ((size_t)64 << 20)

/* A kept buffer larger than this is freed at final rather than reused. */
#define ISOLA_DIGEST_KEEP_BYTES ((size_t)1 << 20)

/* Messages up to this long are kept inside the context, not allocated. */
#define ISOLA_DIGEST_INLINE_BYTES 256

/* A digest context. */
typedef struct digest_ctx {
    isola_prov *prov;
    enum isola_digest_id id;
    unsigned char *msg; /* the message so far (while not spilled): inline or allocated */
    size_t len;
    size_t cap;
    unsigned char inline_msg[ISOLA_DIGEST_INLINE_BYTES];
    EVP_MD_CTX *sw; /* the software twin (made on first need, reused) */
    int spilled;    /* the message is in sw, not in msg */
} digest_ctx;

/* An idle software context of digest `id` from the provider's few, or a
 * new one (NULL: out of memory). */
static EVP_MD_CTX *twin_take(isola_prov *prov, enum isola_digest_id id)
{
    EVP_MD_CTX *twin = NULL;

    if (pthread_mutex_trylock(&prov->idle_lock) == 0) {
        if (prov->n_idle_md[id] > 0)
            twin = prov->idle_md[id][--prov->n_idle_md[id]];
        pthread_mutex_unlock(&prov->idle_lock);
    }
    return twin != NULL ? twin : EVP_MD_CTX_new();
}

/* Gives a software context back for reuse, or frees it. */
static void twin_give(isola_prov *prov, enum isola_digest_id id, EVP_MD_CTX *twin)
{
    if (twin == NULL)
        return;
    if (pthread_mutex_trylock(&prov->idle_lock) == 0) {
        if (prov->n_idle_md[id] < ISOLA_IDLE_TWINS) {
            prov->idle_md[id][prov->n_idle_md[id]++] = twin;
            twin = NULL;
        }
        pthread_mutex_unlock(&prov->idle_lock);
    }
    EVP_MD_CTX_free(twin);
}

/* Frees the idle software digest contexts (provider.h). */
void isola_digest_free_idle(isola_prov *prov)
{
    size_t i, j;

    for (i = 0; i < ISOLA_DIGESTS; i++) {
        for (j = 0; j < prov->n_idle_md[i]; j++)
            EVP_MD_CTX_free(prov->idle_md[i][j]);
        prov->n_idle_md[i] = 0;
    }
}

/* A new context for digest `id`. */
static void *digest_newctx(void *provctx, enum isola_digest_id id)
{
    digest_ctx *ctx = malloc(sizeof(*ctx));

    if (ctx == NULL) {
        isola_prov_error(provctx, ISOLA_R_NO_MEMORY, "digest context");
        return NULL;
    }
    ctx->prov = provctx;
    ctx->id = id;
    ctx->msg = ctx->inline_msg;
    ctx->len = 0;
    ctx->cap = ISOLA_DIGEST_INLINE_BYTES;
    ctx->sw = NULL;
    ctx->spilled = 0;
    return ctx;
}

/* Frees the message's buffer if allocated. */
static void digest_free_msg(digest_ctx *ctx)
{
    if (ctx->msg != ctx->inline_msg)
        free(ctx->msg);
    ctx->msg = ctx->inline_msg;
    ctx->cap = ISOLA_DIGEST_INLINE_BYTES;
}

/* Frees a context. */
static void digest_freectx(void *vctx)
{
    digest_ctx *ctx = vctx;

    if (ctx == NULL)
        return;
    digest_free_msg(ctx);
    twin_give(ctx->prov, ctx->id, ctx->sw);
    free(ctx);
}

/* A copy of a context, its message and twin included. */
static void *digest_dupctx(void *vctx)
{
    const digest_ctx *src = vctx;
    digest_ctx *dst = digest_newctx(src->prov, src->id);

    if (dst == NULL)
        return NULL;
    dst->spilled = src->spilled;
    if (src->len > dst->cap) {
        dst->msg = malloc(src->len);
        if (dst->msg == NULL) {
            dst->msg = dst->inline_msg;
            goto fail;
        }
        dst->cap = src->len;
    }
    if (src->len > 0)
        memcpy(dst->msg, src->msg, src->len);
    dst->len = src->len;
    if (src->sw != NULL) {
        dst->sw = EVP_MD_CTX_new();
        if (dst->sw == NULL || !EVP_MD_CTX_copy_ex(dst->sw, src->sw))
            goto fail;
    }
    return dst;
fail:
    isola_prov_error(src->prov, ISOLA_R_NO_MEMORY, "digest context copy");
    digest_freectx(dst);
    return NULL;
}

/* Starts the software twin over `data`: the message so far. */
static int digest_start_software(digest_ctx *ctx, const unsigned char *data, size_t len)
{
    if (ctx->sw == NULL && (ctx->sw = twin_take(ctx->prov, ctx->id)) == NULL) {
        isola_prov_error(ctx->prov, ISOLA_R_NO_MEMORY, "software digest context");
        return 0;
    }
    if (!EVP_DigestInit_ex2(ctx->sw, ctx->prov->sw_md[ctx->id], NULL)
        || (len > 0 && !EVP_DigestUpdate(ctx->sw, data, len))) {
        isola_prov_error(ctx->prov, ISOLA_R_SOFTWARE_FAILED, "%s", isola_digests[ctx->id].sw_name);
        return 0;
    }
    return 1;
}

/* Moves the message kept so far to the software twin for good (until init). */
static int digest_spill(digest_ctx *ctx)
{
    if (ctx->spilled)
        return 1;
    if (!digest_start_software(ctx, ctx->msg, ctx->len))
        return 0;
    isola_adapter_count_local(ctx->prov->adapter, ctx->len);
    ctx->spilled = 1;
    ctx->len = 0;
    return 1;
}

/* Forgets the message, keeping a buffer of reasonable size for reuse. */
static void digest_forget(digest_ctx *ctx)
{
    if (ctx->cap > ISOLA_DIGEST_KEEP_BYTES)
        digest_free_msg(ctx);
    ctx->len = 0;
    ctx->spilled = 0;
}

static int digest_set_ctx_params(void *vctx, const OSSL_PARAM params[]);

/* Starts a message. */
static int digest_init(void *vctx, const OSSL_PARAM params[])
{
    digest_ctx *ctx = vctx;

    digest_forget(ctx);
    return digest_set_ctx_params(ctx, params);
}

/* Adds `in` to the message: kept, or given to the twin once spilled. */
static int digest_update(void *vctx, const unsigned char *in, size_t inl)
{
    digest_ctx *ctx = vctx;

    if (inl == 0)
        return 1;
    if (!ctx->spilled && inl > ISOLA_DIGEST_SPILL_BYTES - ctx->len && !digest_spill(ctx))
        return 0;
    if (ctx->spilled) {
        isola_adapter_count_local(ctx->prov->adapter, inl);
        if (!EVP_DigestUpdate(ctx->sw, in, inl)) {
            isola_prov_error(ctx->prov, ISOLA_R_SOFTWARE_FAILED, "%s update", isola_digests[ctx->id].sw_name);
            return 0;
        }
        return 1;
    }
    if (ctx->len + inl > ctx->cap) {
        size_t cap = ctx->cap < 4096 ? 4096 : ctx->cap;
        unsigned char *grown;

        while (cap < ctx->len + inl)
            cap = cap > ISOLA_DIGEST_SPILL_BYTES / 2 ? ISOLA_DIGEST_SPILL_BYTES : cap * 2;
        grown = ctx->msg == ctx->inline_msg ? malloc(cap) : realloc(ctx->msg, cap);
        if (grown == NULL) /* no room to keep it: hash it in software instead */
            return digest_spill(ctx) && digest_update(ctx, in, inl);
        if (ctx->msg == ctx->inline_msg)
            memcpy(grown, ctx->inline_msg, ctx->len);
        ctx->msg = grown;
        ctx->cap = cap;
    }
    memcpy(ctx->msg + ctx->len, in, inl);
    ctx->len += inl;
    return 1;
}

/* Hashes the kept message on isolad into out: 1 done, 0 fall back to
 * software, -1 fail the call (fallback = error, the error raised). */
static int digest_offload(digest_ctx *ctx, unsigned char *out)
{
    const isola_digest_info *info = &isola_digests[ctx->id];
    static const unsigned char empty = 0;
    isola_in_piece in = { ctx->len > 0 ? ctx->msg : &empty, ctx->len };
    isola_out_piece res = { out, info->size };
    isola_run_result result;
    isola_run_status status =
        isola_adapter_run(ctx->prov->adapter, info->op, NULL, 0, &in, 1, &res, 1, &result);

    if (status == ISOLA_RUN_DONE && result.output_len == info->size)
        return 1;
    if (status == ISOLA_RUN_FALLBACK && isola_prov_fallback_is_error(ctx->prov)) {
        isola_prov_error(ctx->prov, ISOLA_R_OFFLOAD_FAILED, "%s on isolad: %s (fallback = error)", info->op,
                         isola_fallback_reason_name((int)result.reason));
        return -1;
    }
    return 0; /* a fallback, or the operator failed: software gives the answer */
}

/* Writes the digest. */
static int digest_final(void *vctx, unsigned char *out, size_t *outl, size_t outsz)
{
    digest_ctx *ctx = vctx;
    const isola_digest_info *info = &isola_digests[ctx->id];
    unsigned int swlen = 0;
    int ok = 0;

    if (outsz < info->size) {
        isola_prov_error(ctx->prov, ISOLA_R_OUTPUT_TOO_SMALL, "%s needs %zu bytes", info->sw_name, info->size);
        return 0;
    }
    if (!ctx->spilled && ctx->len >= isola_prov_min_bytes(ctx->prov, info->default_min_bytes)) {
        int r = digest_offload(ctx, out);

        if (r != 0) {
            ok = r > 0;
            goto done;
        }
    } else if (!ctx->spilled) {
        isola_adapter_count_local(ctx->prov->adapter, ctx->len);
    }
    if (!ctx->spilled && !digest_start_software(ctx, ctx->msg, ctx->len))
        goto done;
    if (!EVP_DigestFinal_ex(ctx->sw, out, &swlen)) {
        isola_prov_error(ctx->prov, ISOLA_R_SOFTWARE_FAILED, "%s final", info->sw_name);
        goto done;
    }
    ok = 1;
done:
    if (ok)
        *outl = info->size;
    digest_forget(ctx);
    return ok;
}

/* Context parameters (none of these digests takes one but SHA-1's SSLv3
 * master secret): the context goes to its twin, which takes them. */
static int digest_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    digest_ctx *ctx = vctx;

    if (params == NULL || params[0].key == NULL)
        return 1;
    return digest_spill(ctx) && EVP_MD_CTX_set_params(ctx->sw, params);
}

/* Context parameters asked for: the twin answers. */
static int digest_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    digest_ctx *ctx = vctx;

    if (params == NULL || params[0].key == NULL)
        return 1;
    return digest_spill(ctx) && EVP_MD_CTX_get_params(ctx->sw, params);
}

/* The algorithm's constants, as the default provider gives them. */
static int digest_get_params(enum isola_digest_id id, OSSL_PARAM params[])
{
    const isola_digest_info *info = &isola_digests[id];
    OSSL_PARAM *p;

    if ((p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_BLOCK_SIZE)) != NULL
        && !OSSL_PARAM_set_size_t(p, info->block_size))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_SIZE)) != NULL && !OSSL_PARAM_set_size_t(p, info->size))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_XOF)) != NULL && !OSSL_PARAM_set_int(p, 0))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_ALGID_ABSENT)) != NULL
        && !OSSL_PARAM_set_int(p, info->algid_absent))
        return 0;
    return 1;
}

/* The constants' table. */
static const OSSL_PARAM *digest_gettable_params(void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_size_t(OSSL_DIGEST_PARAM_BLOCK_SIZE, NULL),
        OSSL_PARAM_size_t(OSSL_DIGEST_PARAM_SIZE, NULL),
        OSSL_PARAM_int(OSSL_DIGEST_PARAM_XOF, NULL),
        OSSL_PARAM_int(OSSL_DIGEST_PARAM_ALGID_ABSENT, NULL),
        OSSL_PARAM_END,
    };

    (void)provctx;
    return table;
}

/*
 * The per-algorithm entry points: only what must know its algorithm
 * without a context (newctx, get_params, the context parameter tables)
 * is generated; everything else is the generic code above.
 */
#define ISOLA_DIGEST_FUNCTIONS(name, id)                                                                  \
    static void *name##_newctx(void *provctx) { return digest_newctx(provctx, id); }                      \
    static int name##_get_params(OSSL_PARAM params[]) { return digest_get_params(id, params); }           \
    static const OSSL_PARAM *name##_settable_ctx_params(void *dctx, void *provctx)                        \
    {                                                                                                     \
        (void)dctx;                                                                                       \
        return EVP_MD_settable_ctx_params(((isola_prov *)provctx)->sw_md[id]);                            \
    }                                                                                                     \
    static const OSSL_PARAM *name##_gettable_ctx_params(void *dctx, void *provctx)                        \
    {                                                                                                     \
        (void)dctx;                                                                                       \
        return EVP_MD_gettable_ctx_params(((isola_prov *)provctx)->sw_md[id]);                            \
    }                                                                                                     \
    static const OSSL_DISPATCH name##_functions[] = {                                                     \
        { OSSL_FUNC_DIGEST_NEWCTX, (void (*)(void))name##_newctx },                                       \
        { OSSL_FUNC_DIGEST_INIT, (void (*)(void))digest_init },                                           \
        { OSSL_FUNC_DIGEST_UPDATE, (void (*)(void))digest_update },                                       \
        { OSSL_FUNC_DIGEST_FINAL, (void (*)(void))digest_final },                                         \
        { OSSL_FUNC_DIGEST_FREECTX, (void (*)(void))digest_freectx },                                     \
        { OSSL_FUNC_DIGEST_DUPCTX, (void (*)(void))digest_dupctx },                                       \
        { OSSL_FUNC_DIGEST_GET_PARAMS, (void (*)(void))name##_get_params },                               \
        { OSSL_FUNC_DIGEST_GETTABLE_PARAMS, (void (*)(void))digest_gettable_params },                     \
        { OSSL_FUNC_DIGEST_SET_CTX_PARAMS, (void (*)(void))digest_set_ctx_params },                       \
        { OSSL_FUNC_DIGEST_SETTABLE_CTX_PARAMS, (void (*)(void))name##_settable_ctx_params },             \
        { OSSL_FUNC_DIGEST_GET_CTX_PARAMS, (void (*)(void))digest_get_ctx_params },                       \
        { OSSL_FUNC_DIGEST_GETTABLE_CTX_PARAMS, (void (*)(void))name##_gettable_ctx_params },             \
        { 0, NULL },                                                                                      \
    };

ISOLA_DIGEST_FUNCTIONS(sha256, ISOLA_SHA256)
ISOLA_DIGEST_FUNCTIONS(sha1, ISOLA_SHA1)
ISOLA_DIGEST_FUNCTIONS(sha3_256, ISOLA_SHA3_256)
ISOLA_DIGEST_FUNCTIONS(md5, ISOLA_MD5)

/* The digests, under the default provider's names. */
const OSSL_ALGORITHM isola_digest_algorithms[] = {
    { "SHA2-256:SHA-256:SHA256:2.16.840.1.101.3.4.2.1", "provider=isola", sha256_functions,
      "SHA-256, on isolad" },
    { "SHA1:SHA-1:SSL3-SHA1:1.3.14.3.2.26", "provider=isola", sha1_functions, "SHA-1, on isolad" },
    { "SHA3-256:2.16.840.1.101.3.4.2.8", "provider=isola", sha3_256_functions, "SHA3-256, on isolad" },
    { "MD5:SSL3-MD5:1.2.840.113549.2.5", "provider=isola", md5_functions, "MD5, on isolad" },
    { NULL, NULL, NULL, NULL },
};
