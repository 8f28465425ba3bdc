/*
 * gcm.c: the provider's one AES-GCM implementation (AES-128-GCM and
 * AES-256-GCM), with EVP's AEAD semantics.
 *
 * A message (from an init with an IV to its final) is offloaded when its
 * first data update is at least the threshold: that update goes to isolad's
 * `aes-gcm` operator with the key, the IV and the AAD in-band, returns its
 * output at once, and the tag the operator computed is kept for final
 * (encrypt: the tag to give; decrypt: compared, with CRYPTO_memcmp, with the
 * tag the application set). Anything else runs in software on the
 * context's twin, an EVP_CIPHER_CTX of the private default provider that is
 * brought to the message's state by replaying it (key, IV, AAD, the
 * offloaded chunk, kept for this): a second data update, a small one, a
 * 12-byte-less IV, an IV the cipher must generate, a call out of order. TLS
 * and unknown parameters, and EVP_Cipher, give the context to its twin for
 * good.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>

#include "provider.h"

#define GCM_IV_DEFAULT 12   /* the only IV length offloaded */
#define GCM_IV_MAX 128      /* the longest IV, as the default provider's */
#define GCM_TAG_MAX 16

/* Where the IV stands, as in the default provider. */
enum gcm_iv_state {
    GCM_IV_UNSET,   /* none given: encrypting generates one (software) */
    GCM_IV_SET,     /* given: a message may run */
    GCM_IV_FINISHED /* used by a final (or its length changed): no data until a new IV */
};

/* An AES-GCM context. */
typedef struct gcm_ctx {
    isola_prov *prov;
    enum isola_cipher_id id;
    int enc;
    int key_set;
    unsigned char key[32];
    size_t ivlen;
    unsigned char iv[GCM_IV_MAX];
    enum gcm_iv_state iv_state;
    unsigned char *aad; /* the message's AAD so far */
    size_t aad_len;
    size_t aad_cap;
    unsigned char *chunk; /* the offloaded chunk's input, kept to replay it */
    size_t chunk_len;
    int chunk_done;                  /* one chunk ran on isolad */
    unsigned char op_tag[GCM_TAG_MAX]; /* the tag isolad computed for it */
    unsigned char tag[GCM_TAG_MAX];    /* encrypt: the final tag; decrypt: the one set */
    size_t taglen;                   /* 0: none yet */
    EVP_CIPHER_CTX *sw;              /* the software twin (allocated on first need) */
    int sw_keyed;                    /* the twin holds this cipher, key and IV length */
    int sw_active;                   /* this message runs on the twin */
    int sw_for_good;                 /* every message runs on the twin */
} gcm_ctx;

/* A new context for cipher `id`. */
static void *gcm_newctx(void *provctx, enum isola_cipher_id id)
{
    gcm_ctx *ctx = calloc(1, sizeof(*ctx));

    if (ctx == NULL) {
        isola_prov_error(provctx, ISOLA_R_NO_MEMORY, "cipher context");
        return NULL;
    }
    ctx->prov = provctx;
    ctx->id = id;
    ctx->ivlen = GCM_IV_DEFAULT;
    return ctx;
}

/* Forgets the offloaded chunk. */
static void gcm_drop_chunk(gcm_ctx *ctx)
{
    if (ctx->chunk != NULL) {
        OPENSSL_cleanse(ctx->chunk, ctx->chunk_len);
        free(ctx->chunk);
    }
    ctx->chunk = NULL;
    ctx->chunk_len = 0;
    ctx->chunk_done = 0;
}

/* Frees a context, its secrets wiped. */
static void gcm_freectx(void *vctx)
{
    gcm_ctx *ctx = vctx;

    if (ctx == NULL)
        return;
    gcm_drop_chunk(ctx);
    if (ctx->aad != NULL)
        OPENSSL_cleanse(ctx->aad, ctx->aad_cap);
    free(ctx->aad);
    EVP_CIPHER_CTX_free(ctx->sw);
    OPENSSL_cleanse(ctx, sizeof(*ctx));
    free(ctx);
}

/* A copy of `len` bytes (NULL when len is 0 or out of memory: *ok says). */
static unsigned char *gcm_copy(const unsigned char *src, size_t len, int *ok)
{
    unsigned char *dst;

    if (len == 0 || src == NULL)
        return NULL;
    dst = malloc(len);
    if (dst == NULL)
        *ok = 0;
    else
        memcpy(dst, src, len);
    return dst;
}

/* A copy of a context: its message, chunk and twin included. */
static void *gcm_dupctx(void *vctx)
{
    const gcm_ctx *src = vctx;
    gcm_ctx *dst = malloc(sizeof(*dst));
    int ok = 1;

    if (dst == NULL) {
        isola_prov_error(src->prov, ISOLA_R_NO_MEMORY, "cipher context copy");
        return NULL;
    }
    *dst = *src;
    dst->aad = gcm_copy(src->aad, src->aad_len, &ok);
    dst->aad_cap = dst->aad != NULL ? src->aad_len : 0;
    dst->chunk = gcm_copy(src->chunk, src->chunk_len, &ok);
    dst->sw = NULL;
    if (src->sw != NULL && ((dst->sw = EVP_CIPHER_CTX_new()) == NULL || !EVP_CIPHER_CTX_copy(dst->sw, src->sw)))
        ok = 0;
    if (!ok) {
        isola_prov_error(src->prov, ISOLA_R_NO_MEMORY, "cipher context copy");
        gcm_freectx(dst);
        return NULL;
    }
    return dst;
}

/* Brings the twin to this message's state and runs the message there from
 * now on: replays the key (unless the twin has it from an earlier message),
 * the IV, the AAD and the offloaded chunk. */
static int gcm_to_software(gcm_ctx *ctx)
{
    const EVP_CIPHER *cipher = ctx->prov->sw_cipher[ctx->id];
    unsigned char *scratch = NULL;
    int n, ok;

    if (ctx->sw_active)
        return 1;
    if (ctx->sw == NULL && (ctx->sw = EVP_CIPHER_CTX_new()) == NULL) {
        isola_prov_error(ctx->prov, ISOLA_R_NO_MEMORY, "software cipher context");
        return 0;
    }
    ok = ctx->sw_keyed && ctx->key_set && ctx->iv_state != GCM_IV_UNSET; /* only a new IV needed */
    if (!ok) {
        ctx->sw_keyed = 0;
        ok = EVP_CipherInit_ex2(ctx->sw, cipher, NULL, NULL, ctx->enc, NULL);
    }
    if (ok && !ctx->sw_keyed && ctx->ivlen != GCM_IV_DEFAULT) {
        OSSL_PARAM p[2] = { OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, &ctx->ivlen),
                            OSSL_PARAM_construct_end() };

        ok = EVP_CIPHER_CTX_set_params(ctx->sw, p);
    }
    if (ok && ctx->key_set && !ctx->sw_keyed)
        ok = EVP_CipherInit_ex2(ctx->sw, NULL, ctx->key, NULL, ctx->enc, NULL);
    if (ok && ctx->iv_state != GCM_IV_UNSET)
        ok = EVP_CipherInit_ex2(ctx->sw, NULL, NULL, ctx->iv, ctx->enc, NULL);
    if (ok && ctx->aad_len > 0)
        ok = EVP_CipherUpdate(ctx->sw, NULL, &n, ctx->aad, (int)ctx->aad_len);
    if (ok && ctx->chunk_done) {
        ok = (scratch = malloc(ctx->chunk_len)) != NULL
             && EVP_CipherUpdate(ctx->sw, scratch, &n, ctx->chunk, (int)ctx->chunk_len);
        isola_adapter_count_local(ctx->prov->adapter, ctx->chunk_len);
    }
    if (ok && !ctx->enc && ctx->taglen > 0) {
        OSSL_PARAM p[2] = { OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, ctx->tag, ctx->taglen),
                            OSSL_PARAM_construct_end() };

        ok = EVP_CIPHER_CTX_set_params(ctx->sw, p);
    }
    if (ok && ctx->chunk_done && ctx->iv_state == GCM_IV_FINISHED)
        (void)EVP_CipherFinal_ex(ctx->sw, scratch, &n); /* its outcome was given already */
    if (scratch != NULL) {
        OPENSSL_cleanse(scratch, ctx->chunk_len);
        free(scratch);
    }
    if (!ok) {
        ctx->sw_keyed = 0;
        isola_prov_error(ctx->prov, ISOLA_R_SOFTWARE_FAILED, "%s: replay", isola_ciphers[ctx->id].sw_name);
        return 0;
    }
    gcm_drop_chunk(ctx);
    ctx->sw_keyed = ctx->key_set;
    ctx->sw_active = 1;
    return 1;
}

/* Starts the message afresh (a new IV): the twin no longer has it. */
static void gcm_new_message(gcm_ctx *ctx)
{
    gcm_drop_chunk(ctx);
    ctx->aad_len = 0;
    ctx->sw_active = 0;
}

static int gcm_set_ctx_params(void *vctx, const OSSL_PARAM params[]);

/* EVP_CipherInit: a key, an IV (a new message), or both, or neither. The
 * context records them even when its twin runs the message, for the
 * messages after. */
static int gcm_init(gcm_ctx *ctx, const unsigned char *key, size_t keylen, const unsigned char *iv, size_t ivlen,
                    const OSSL_PARAM params[], int enc)
{
    int forward;

    if (key != NULL && keylen != isola_ciphers[ctx->id].key_len) {
        isola_prov_error(ctx->prov, ISOLA_R_BAD_STATE, "key length %zu", keylen);
        return 0;
    }
    if (iv != NULL && (ivlen == 0 || ivlen > GCM_IV_MAX)) {
        isola_prov_error(ctx->prov, ISOLA_R_BAD_STATE, "IV length %zu", ivlen);
        return 0;
    }
    if (!ctx->sw_for_good && iv == NULL && (ctx->sw_active || ctx->aad_len > 0 || ctx->chunk_done)
        && !gcm_to_software(ctx)) /* an init within a message: the twin sees it as the default would */
        return 0;
    forward = ctx->sw_for_good || (ctx->sw_active && iv == NULL);
    ctx->enc = enc;
    if (key != NULL) {
        if (!ctx->key_set || CRYPTO_memcmp(ctx->key, key, keylen) != 0)
            ctx->sw_keyed = forward; /* a forwarded init gives the twin the key too */
        memcpy(ctx->key, key, keylen);
        ctx->key_set = 1;
    }
    if (iv != NULL) {
        if (!forward)
            gcm_new_message(ctx);
        if (ivlen != ctx->ivlen)
            ctx->sw_keyed = 0;
        ctx->ivlen = ivlen;
        memcpy(ctx->iv, iv, ivlen);
        ctx->iv_state = GCM_IV_SET;
    }
    if (forward && !EVP_CipherInit_ex2(ctx->sw, NULL, key, iv, enc, NULL)) {
        ctx->sw_keyed = 0;
        return 0;
    }
    return gcm_set_ctx_params(ctx, params);
}

/* OSSL_FUNC_CIPHER_ENCRYPT_INIT. */
static int gcm_einit(void *vctx, const unsigned char *key, size_t keylen, const unsigned char *iv, size_t ivlen,
                     const OSSL_PARAM params[])
{
    return gcm_init(vctx, key, keylen, iv, ivlen, params, 1);
}

/* OSSL_FUNC_CIPHER_DECRYPT_INIT. */
static int gcm_dinit(void *vctx, const unsigned char *key, size_t keylen, const unsigned char *iv, size_t ivlen,
                     const OSSL_PARAM params[])
{
    return gcm_init(vctx, key, keylen, iv, ivlen, params, 0);
}

/* An update on the twin (AAD when out is NULL). */
static int gcm_sw_update(gcm_ctx *ctx, unsigned char *out, size_t *outl, const unsigned char *in, size_t inl)
{
    int n = 0;

    if (inl > INT_MAX) {
        isola_prov_error(ctx->prov, ISOLA_R_BAD_STATE, "update of %zu bytes", inl);
        return 0;
    }
    if (out != NULL)
        isola_adapter_count_local(ctx->prov->adapter, inl);
    if (!EVP_CipherUpdate(ctx->sw, out, &n, in, (int)inl))
        return 0;
    *outl = (size_t)n;
    return 1;
}

/* Appends AAD to the message. */
static int gcm_add_aad(gcm_ctx *ctx, const unsigned char *in, size_t inl)
{
    if (ctx->aad_len + inl > ctx->aad_cap) {
        size_t cap = ctx->aad_cap < 256 ? 256 : ctx->aad_cap;
        unsigned char *grown;

        while (cap < ctx->aad_len + inl)
            cap *= 2;
        if ((grown = malloc(cap)) == NULL)
            return 0;
        if (ctx->aad != NULL) {
            memcpy(grown, ctx->aad, ctx->aad_len);
            OPENSSL_cleanse(ctx->aad, ctx->aad_cap);
            free(ctx->aad);
        }
        ctx->aad = grown;
        ctx->aad_cap = cap;
    }
    memcpy(ctx->aad + ctx->aad_len, in, inl);
    ctx->aad_len += inl;
    return 1;
}

/* Runs the message's first data update on isolad: 1 done (out written, the
 * tag kept), 0 not run (software does it), -1 failed (fallback = error). */
static int gcm_offload(gcm_ctx *ctx, unsigned char *out, const unsigned char *in, size_t inl)
{
    const size_t key_len = isola_ciphers[ctx->id].key_len;
    unsigned char head[1 + 32 + GCM_IV_DEFAULT + 4];
    unsigned char *p = head;
    isola_param direction = { "direction", ctx->enc ? "encrypt" : "decrypt" };
    isola_in_piece pieces[3];
    isola_out_piece outs[2] = { { out, inl }, { ctx->op_tag, GCM_TAG_MAX } };
    isola_run_result result;
    isola_run_status status;

    if (ctx->aad_len > UINT32_MAX || (ctx->chunk = malloc(inl)) == NULL)
        return 0;
    memcpy(ctx->chunk, in, inl); /* before the run: out may be in */
    ctx->chunk_len = inl;
    *p++ = (unsigned char)key_len;
    memcpy(p, ctx->key, key_len);
    p += key_len;
    memcpy(p, ctx->iv, GCM_IV_DEFAULT);
    p += GCM_IV_DEFAULT;
    *p++ = (unsigned char)(ctx->aad_len >> 24);
    *p++ = (unsigned char)(ctx->aad_len >> 16);
    *p++ = (unsigned char)(ctx->aad_len >> 8);
    *p++ = (unsigned char)ctx->aad_len;
    pieces[0] = (isola_in_piece){ head, (size_t)(p - head) };
    pieces[1] = (isola_in_piece){ ctx->aad, ctx->aad_len };
    pieces[2] = (isola_in_piece){ ctx->chunk, inl };
    status = isola_adapter_run(ctx->prov->adapter, "aes-gcm", &direction, 1, pieces, 3, outs, 2, &result);
    OPENSSL_cleanse(head, sizeof(head));
    if (status == ISOLA_RUN_DONE && result.output_len == inl + GCM_TAG_MAX) {
        ctx->chunk_done = 1;
        return 1;
    }
    if (status == ISOLA_RUN_FALLBACK && isola_prov_fallback_is_error(ctx->prov)) {
        isola_prov_error(ctx->prov, ISOLA_R_OFFLOAD_FAILED, "aes-gcm on isolad: %s (fallback = error)",
                         isola_fallback_reason_name((int)result.reason));
        gcm_drop_chunk(ctx);
        return -1;
    }
    return 0; /* the chunk stays kept: software redoes it from the copy */
}

/* OSSL_FUNC_CIPHER_UPDATE: AAD when out is NULL, else data, its output
 * written in the same call. */
static int gcm_update(void *vctx, unsigned char *out, size_t *outl, size_t outsize, const unsigned char *in,
                      size_t inl)
{
    gcm_ctx *ctx = vctx;
    int r;

    if (ctx->sw_active || ctx->sw_for_good)
        return gcm_sw_update(ctx, out, outl, in, inl);
    if (inl == 0) {
        *outl = 0;
        return 1;
    }
    if (out != NULL && outsize < inl) {
        isola_prov_error(ctx->prov, ISOLA_R_OUTPUT_TOO_SMALL, "%zu bytes for %zu", outsize, inl);
        return 0;
    }
    if (ctx->iv_state == GCM_IV_FINISHED) {
        isola_prov_error(ctx->prov, ISOLA_R_BAD_STATE, "update after final: set a new IV");
        return 0;
    }
    if (ctx->key_set && ctx->iv_state == GCM_IV_SET && !ctx->chunk_done) {
        if (out == NULL) {
            if (gcm_add_aad(ctx, in, inl)) {
                *outl = inl;
                return 1;
            }
        } else if (ctx->ivlen == GCM_IV_DEFAULT
                   && inl >= isola_prov_min_bytes(ctx->prov, isola_ciphers[ctx->id].default_min_bytes)) {
            r = gcm_offload(ctx, out, in, inl);
            if (r != 0) {
                *outl = r > 0 ? inl : 0;
                return r > 0;
            }
            if (ctx->chunk != NULL) { /* not run: replay without it, then run it in software */
                unsigned char *kept = ctx->chunk;

                ctx->chunk = NULL;
                ctx->chunk_len = 0;
                r = gcm_to_software(ctx) && gcm_sw_update(ctx, out, outl, kept, inl);
                OPENSSL_cleanse(kept, inl);
                free(kept);
                return r;
            }
        }
    }
    return gcm_to_software(ctx) && gcm_sw_update(ctx, out, outl, in, inl);
}

/* OSSL_FUNC_CIPHER_FINAL: the offloaded chunk's tag given or checked, or
 * the twin's final. */
static int gcm_final(void *vctx, unsigned char *out, size_t *outl, size_t outsize)
{
    gcm_ctx *ctx = vctx;
    int n = 0;

    (void)outsize;
    if (!ctx->sw_active && !ctx->sw_for_good && ctx->iv_state == GCM_IV_FINISHED) {
        isola_prov_error(ctx->prov, ISOLA_R_BAD_STATE, "final after final: set a new IV");
        return 0;
    }
    if (!ctx->sw_active && !ctx->sw_for_good && ctx->chunk_done) {
        *outl = 0;
        if (ctx->enc) {
            memcpy(ctx->tag, ctx->op_tag, GCM_TAG_MAX);
            ctx->taglen = GCM_TAG_MAX;
            ctx->iv_state = GCM_IV_FINISHED;
            return 1;
        }
        if (ctx->taglen == 0) {
            isola_prov_error(ctx->prov, ISOLA_R_BAD_STATE, "decrypt final: the tag was not set");
            return 0;
        }
        ctx->iv_state = GCM_IV_FINISHED;
        return CRYPTO_memcmp(ctx->op_tag, ctx->tag, ctx->taglen) == 0;
    }
    if (!gcm_to_software(ctx) || !EVP_CipherFinal_ex(ctx->sw, out, &n))
        return 0;
    *outl = (size_t)n;
    return 1;
}

/* OSSL_FUNC_CIPHER_CIPHER (EVP_Cipher, as TLS uses it): the twin, for good. */
static int gcm_cipher(void *vctx, unsigned char *out, size_t *outl, size_t outsize, const unsigned char *in,
                      size_t inl)
{
    gcm_ctx *ctx = vctx;
    int r;

    (void)outsize;
    if (inl > INT_MAX || !gcm_to_software(ctx))
        return 0;
    ctx->sw_for_good = 1;
    if (in != NULL && out != NULL)
        isola_adapter_count_local(ctx->prov->adapter, inl);
    r = EVP_Cipher(ctx->sw, out, in, (unsigned int)inl);
    if (r < 0)
        return 0;
    *outl = (size_t)r;
    return 1;
}

/* Whether `key` is a parameter this file handles itself. */
static int gcm_param_is_own(const char *key)
{
    return strcmp(key, OSSL_CIPHER_PARAM_AEAD_TAG) == 0 || strcmp(key, OSSL_CIPHER_PARAM_AEAD_IVLEN) == 0
           || strcmp(key, OSSL_CIPHER_PARAM_KEYLEN) == 0 /* EVP_CIPHER_CTX_set_key_length */
           || strcmp(key, OSSL_CIPHER_PARAM_PADDING) == 0; /* GCM ignores padding, as the default does */
}

/* OSSL_FUNC_CIPHER_SET_CTX_PARAMS: the tag to check, the IV length (also
 * recorded while the twin runs the message, for the messages after); any
 * other (TLS) parameter gives the context to its twin for good. */
static int gcm_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    gcm_ctx *ctx = vctx;
    const OSSL_PARAM *p;
    size_t sz;

    if (params == NULL || params[0].key == NULL)
        return 1;
    for (p = params; p->key != NULL && !ctx->sw_for_good; p++)
        if (!gcm_param_is_own(p->key)) {
            if (!gcm_to_software(ctx))
                return 0;
            ctx->sw_for_good = 1;
        }
    if (ctx->sw_for_good)
        return EVP_CIPHER_CTX_set_params(ctx->sw, params);
    if (ctx->sw_active && !EVP_CIPHER_CTX_set_params(ctx->sw, params))
        return 0;
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TAG)) != NULL) {
        void *vp = ctx->tag;

        if (!OSSL_PARAM_get_octet_string(p, &vp, GCM_TAG_MAX, &sz) || ctx->enc || sz == 0) {
            isola_prov_error(ctx->prov, ISOLA_R_BAD_STATE, "tag: 1 to 16 bytes, when decrypting");
            return 0;
        }
        ctx->taglen = sz;
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_KEYLEN)) != NULL
        && (!OSSL_PARAM_get_size_t(p, &sz) || sz != isola_ciphers[ctx->id].key_len)) {
        isola_prov_error(ctx->prov, ISOLA_R_BAD_STATE, "key length: %zu only", isola_ciphers[ctx->id].key_len);
        return 0;
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_IVLEN)) != NULL) {
        if (!OSSL_PARAM_get_size_t(p, &sz) || sz == 0 || sz > GCM_IV_MAX) {
            isola_prov_error(ctx->prov, ISOLA_R_BAD_STATE, "IV length");
            return 0;
        }
        if (sz != ctx->ivlen) {
            if (ctx->iv_state != GCM_IV_UNSET)
                ctx->iv_state = GCM_IV_FINISHED; /* the IV given no longer fits */
            ctx->ivlen = sz;
            ctx->sw_keyed = ctx->sw_active; /* a twin that took it has it */
        }
    }
    return 1;
}

/* Whether every parameter asked for is one this file answers itself. */
static int gcm_params_are_own(const OSSL_PARAM params[], int iv_known)
{
    static const char *const own[] = { OSSL_CIPHER_PARAM_KEYLEN, OSSL_CIPHER_PARAM_IVLEN,
                                       OSSL_CIPHER_PARAM_AEAD_TAGLEN, OSSL_CIPHER_PARAM_AEAD_TAG,
                                       OSSL_CIPHER_PARAM_IV, OSSL_CIPHER_PARAM_UPDATED_IV };
    size_t i;

    for (; params->key != NULL; params++) {
        for (i = 0; i < sizeof(own) / sizeof(own[0]); i++)
            if (strcmp(params->key, own[i]) == 0)
                break;
        if (i == sizeof(own) / sizeof(own[0]))
            return 0;
        if (i >= 4 && !iv_known) /* an IV the cipher must generate: software */
            return 0;
    }
    return 1;
}

/* OSSL_FUNC_CIPHER_GET_CTX_PARAMS: lengths, the IV, the tag after an
 * encrypt's final; anything else from the twin. */
static int gcm_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    gcm_ctx *ctx = vctx;
    OSSL_PARAM *p;

    if (params == NULL || params[0].key == NULL)
        return 1;
    if (!ctx->sw_active && !ctx->sw_for_good && !gcm_params_are_own(params, ctx->iv_state != GCM_IV_UNSET)
        && !gcm_to_software(ctx))
        return 0;
    if (ctx->sw_active || ctx->sw_for_good)
        return EVP_CIPHER_CTX_get_params(ctx->sw, params);
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_KEYLEN)) != NULL
        && !OSSL_PARAM_set_size_t(p, isola_ciphers[ctx->id].key_len))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IVLEN)) != NULL && !OSSL_PARAM_set_size_t(p, ctx->ivlen))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TAGLEN)) != NULL
        && !OSSL_PARAM_set_size_t(p, ctx->taglen > 0 ? ctx->taglen : GCM_TAG_MAX))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IV)) != NULL
        && ((p->data != NULL && ctx->ivlen > p->data_size) || !OSSL_PARAM_set_octet_string(p, ctx->iv, ctx->ivlen)))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_UPDATED_IV)) != NULL
        && ((p->data != NULL && ctx->ivlen > p->data_size) || !OSSL_PARAM_set_octet_string(p, ctx->iv, ctx->ivlen)))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TAG)) != NULL) {
        size_t sz = p->data == NULL ? ctx->taglen : p->data_size;

        if (!ctx->enc || ctx->taglen == 0 || sz == 0 || sz > GCM_TAG_MAX) {
            isola_prov_error(ctx->prov, ISOLA_R_BAD_STATE, "tag: only after an encryption's final, 1 to 16 bytes");
            return 0;
        }
        if (!OSSL_PARAM_set_octet_string(p, ctx->tag, sz))
            return 0;
    }
    return 1;
}

/* The algorithm's constants, as the default provider gives them. */
static int gcm_get_params(enum isola_cipher_id id, OSSL_PARAM params[])
{
    OSSL_PARAM *p;

    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_MODE)) != NULL && !OSSL_PARAM_set_uint(p, EVP_CIPH_GCM_MODE))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_KEYLEN)) != NULL
        && !OSSL_PARAM_set_size_t(p, isola_ciphers[id].key_len))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IVLEN)) != NULL && !OSSL_PARAM_set_size_t(p, GCM_IV_DEFAULT))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_BLOCK_SIZE)) != NULL && !OSSL_PARAM_set_size_t(p, 1))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD)) != NULL && !OSSL_PARAM_set_int(p, 1))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_CUSTOM_IV)) != NULL && !OSSL_PARAM_set_int(p, 1))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_CTS)) != NULL && !OSSL_PARAM_set_int(p, 0))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK)) != NULL && !OSSL_PARAM_set_int(p, 0))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_HAS_RAND_KEY)) != NULL && !OSSL_PARAM_set_int(p, 0))
        return 0;
    return 1;
}

/* The constants' table. */
static const OSSL_PARAM *gcm_gettable_params(void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_uint(OSSL_CIPHER_PARAM_MODE, NULL),
        OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
        OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, NULL),
        OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_BLOCK_SIZE, NULL),
        OSSL_PARAM_int(OSSL_CIPHER_PARAM_AEAD, NULL),
        OSSL_PARAM_int(OSSL_CIPHER_PARAM_CUSTOM_IV, NULL),
        OSSL_PARAM_int(OSSL_CIPHER_PARAM_CTS, NULL),
        OSSL_PARAM_int(OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK, NULL),
        OSSL_PARAM_int(OSSL_CIPHER_PARAM_HAS_RAND_KEY, NULL),
        OSSL_PARAM_END,
    };

    (void)provctx;
    return table;
}

/*
 * The per-key-size entry points: only what must know its algorithm without
 * a context is generated; everything else is the code above.
 */
#define ISOLA_GCM_FUNCTIONS(name, id)                                                                     \
    static void *name##_newctx(void *provctx) { return gcm_newctx(provctx, id); }                         \
    static int name##_get_params(OSSL_PARAM params[]) { return gcm_get_params(id, params); }              \
    static const OSSL_PARAM *name##_settable_ctx_params(void *cctx, void *provctx)                        \
    {                                                                                                     \
        (void)cctx;                                                                                       \
        return EVP_CIPHER_settable_ctx_params(((isola_prov *)provctx)->sw_cipher[id]);                    \
    }                                                                                                     \
    static const OSSL_PARAM *name##_gettable_ctx_params(void *cctx, void *provctx)                        \
    {                                                                                                     \
        (void)cctx;                                                                                       \
        return EVP_CIPHER_gettable_ctx_params(((isola_prov *)provctx)->sw_cipher[id]);                    \
    }                                                                                                     \
    static const OSSL_DISPATCH name##_functions[] = {                                                     \
        { OSSL_FUNC_CIPHER_NEWCTX, (void (*)(void))name##_newctx },                                       \
        { OSSL_FUNC_CIPHER_ENCRYPT_INIT, (void (*)(void))gcm_einit },                                     \
        { OSSL_FUNC_CIPHER_DECRYPT_INIT, (void (*)(void))gcm_dinit },                                     \
        { OSSL_FUNC_CIPHER_UPDATE, (void (*)(void))gcm_update },                                          \
        { OSSL_FUNC_CIPHER_FINAL, (void (*)(void))gcm_final },                                            \
        { OSSL_FUNC_CIPHER_CIPHER, (void (*)(void))gcm_cipher },                                          \
        { OSSL_FUNC_CIPHER_FREECTX, (void (*)(void))gcm_freectx },                                        \
        { OSSL_FUNC_CIPHER_DUPCTX, (void (*)(void))gcm_dupctx },                                          \
        { OSSL_FUNC_CIPHER_GET_PARAMS, (void (*)(void))name##_get_params },                               \
        { OSSL_FUNC_CIPHER_GETTABLE_PARAMS, (void (*)(void))gcm_gettable_params },                        \
        { OSSL_FUNC_CIPHER_GET_CTX_PARAMS, (void (*)(void))gcm_get_ctx_params },                          \
        { OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS, (void (*)(void))name##_gettable_ctx_params },             \
        { OSSL_FUNC_CIPHER_SET_CTX_PARAMS, (void (*)(void))gcm_set_ctx_params },                          \
        { OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS, (void (*)(void))name##_settable_ctx_params },             \
        { 0, NULL },                                                                                      \
    };

ISOLA_GCM_FUNCTIONS(aes128gcm, ISOLA_AES_128_GCM)
ISOLA_GCM_FUNCTIONS(aes256gcm, ISOLA_AES_256_GCM)

/* The ciphers, under the default provider's names. */
const OSSL_ALGORITHM isola_cipher_algorithms[] = {
    { "AES-128-GCM:id-aes128-GCM:2.16.840.1.101.3.4.1.6", "provider=isola", aes128gcm_functions,
      "AES-128-GCM, on isolad" },
    { "AES-256-GCM:id-aes256-GCM:2.16.840.1.101.3.4.1.46", "provider=isola", aes256gcm_functions,
      "AES-256-GCM, on isolad" },
    { NULL, NULL, NULL, NULL },
};
