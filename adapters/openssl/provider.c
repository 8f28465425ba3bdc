/*
 * provider.c: the isola OpenSSL 3 provider's entry point.
 *
 * OSSL_provider_init reads the provider's settings (its openssl.cnf section,
 * then the ISOLA_* environment), makes the process's isola_adapter (which
 * attaches to isolad on first use), and a private library context holding
 * only the default provider: the software twins every context keeps or
 * builds come from there, so the provider never recurses into itself.
 * It answers OSSL_PROVIDER_get_params with its counters besides the
 * standard name, version, buildinfo and status.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "provider.h"

/* The provider's version (its get_params). */
#define ISOLA_PROVIDER_VERSION "0.1.0"

/*
 * The algorithms' constants. default_min_bytes: the measured crossover
 * (docs/applications.md and docs/perf.md, "Unmodified applications"), below which the round trip costs more than the
 * work; min_bytes overrides it.
 */
const isola_digest_info isola_digests[ISOLA_DIGESTS] = {
    [ISOLA_SHA256] = { "SHA2-256", "sha256", 32, 64, 16384, 1 },
    [ISOLA_SHA1] = { "SHA1", "sha1", 20, 64, 16384, 1 },
    [ISOLA_SHA3_256] = { "SHA3-256", "sha3-256", 32, 136, 4096, 1 },
    [ISOLA_MD5] = { "MD5", "md5", 16, 64, 4096, 0 },
};

const isola_cipher_info isola_ciphers[ISOLA_CIPHERS] = {
    [ISOLA_AES_128_GCM] = { "AES-128-GCM", 16, 32768 },
    [ISOLA_AES_256_GCM] = { "AES-256-GCM", 32, 65536 },
};

/* The settings read from the provider's openssl.cnf section. */
static const char *const config_keys[] = { "socket", "tenant", "fallback", "timeout_ms", "retry_ms", "min_bytes" };
#define N_CONFIG_KEYS (sizeof(config_keys) / sizeof(config_keys[0]))

/* Raises an error of the provider's library (provider.h). */
void isola_prov_error(const isola_prov *prov, int reason, const char *fmt, ...)
{
    va_list ap;

    if (prov == NULL || prov->core_new_error == NULL)
        return;
    va_start(ap, fmt);
    prov->core_new_error(prov->handle);
    prov->core_set_error_debug(prov->handle, OPENSSL_FILE, OPENSSL_LINE, "isola");
    prov->core_vset_error(prov->handle, (uint32_t)reason, fmt, ap);
    va_end(ap);
}

/* The threshold in force for an algorithm (provider.h). */
size_t isola_prov_min_bytes(const isola_prov *prov, size_t default_min_bytes)
{
    int64_t min = isola_adapter_config_of(prov->adapter)->min_bytes;

    return min < 0 ? default_min_bytes : (size_t)min;
}

/* Whether fallback = error (provider.h). */
int isola_prov_fallback_is_error(const isola_prov *prov)
{
    return isola_adapter_config_of(prov->adapter)->fallback == ISOLA_FALLBACK_ERROR;
}

/* The reason strings of isola_prov_error's reasons. */
static const OSSL_ITEM reason_strings[] = {
    { ISOLA_R_OFFLOAD_FAILED, "isolad could not run the call (fallback = error)" },
    { ISOLA_R_SOFTWARE_FAILED, "the software implementation failed" },
    { ISOLA_R_NO_MEMORY, "out of memory" },
    { ISOLA_R_BAD_STATE, "call out of order" },
    { ISOLA_R_BAD_CONFIG, "bad isola provider setting" },
    { ISOLA_R_OUTPUT_TOO_SMALL, "output buffer too small" },
    { 0, NULL },
};

/* OSSL_FUNC_PROVIDER_GET_REASON_STRINGS. */
static const OSSL_ITEM *prov_get_reason_strings(void *provctx)
{
    (void)provctx;
    return reason_strings;
}

/* Frees what init made; the adapter writes its ISOLA_STATS line here. */
static void prov_teardown(void *provctx)
{
    isola_prov *prov = provctx;
    size_t i;

    if (prov == NULL)
        return;
    isola_digest_free_idle(prov);
    pthread_mutex_destroy(&prov->idle_lock);
    for (i = 0; i < ISOLA_DIGESTS; i++)
        EVP_MD_free(prov->sw_md[i]);
    for (i = 0; i < ISOLA_CIPHERS; i++)
        EVP_CIPHER_free(prov->sw_cipher[i]);
    if (prov->sw_default != NULL)
        OSSL_PROVIDER_unload(prov->sw_default);
    OSSL_LIB_CTX_free(prov->sw_libctx);
    isola_adapter_free(prov->adapter);
    OPENSSL_free(prov);
}

/* The provider's own parameters: the standard ones and the counters. */
static const OSSL_PARAM *prov_gettable_params(void *provctx)
{
    static const OSSL_PARAM table[] = {
        OSSL_PARAM_DEFN(OSSL_PROV_PARAM_NAME, OSSL_PARAM_UTF8_PTR, NULL, 0),
        OSSL_PARAM_DEFN(OSSL_PROV_PARAM_VERSION, OSSL_PARAM_UTF8_PTR, NULL, 0),
        OSSL_PARAM_DEFN(OSSL_PROV_PARAM_BUILDINFO, OSSL_PARAM_UTF8_PTR, NULL, 0),
        OSSL_PARAM_DEFN(OSSL_PROV_PARAM_STATUS, OSSL_PARAM_INTEGER, NULL, 0),
        OSSL_PARAM_DEFN("isola-offloaded", OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
        OSSL_PARAM_DEFN("isola-offloaded-bytes", OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
        OSSL_PARAM_DEFN("isola-local", OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
        OSSL_PARAM_DEFN("isola-fallbacks", OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
        OSSL_PARAM_DEFN("isola-stats", OSSL_PARAM_UTF8_STRING, NULL, 0),
        OSSL_PARAM_END,
    };

    (void)provctx;
    return table;
}

/* OSSL_PROVIDER_get_params: isola-offloaded, isola-local, isola-fallbacks
 * (all reasons together) and isola-stats (the JSON line of ISOLA_STATS). */
static int prov_get_params(void *provctx, OSSL_PARAM params[])
{
    isola_prov *prov = provctx;
    isola_adapter_stats st;
    uint64_t fallbacks = 0;
    OSSL_PARAM *p;
    size_t i;

    isola_adapter_stats_get(prov->adapter, &st);
    for (i = 0; i < ISOLA_FALLBACK_REASONS; i++)
        fallbacks += st.fallbacks[i];
    if ((p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_NAME)) != NULL
        && !OSSL_PARAM_set_utf8_ptr(p, "isola: OpenSSL on isolad"))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_VERSION)) != NULL
        && !OSSL_PARAM_set_utf8_ptr(p, ISOLA_PROVIDER_VERSION))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_BUILDINFO)) != NULL
        && !OSSL_PARAM_set_utf8_ptr(p, "isola " ISOLA_PROVIDER_VERSION ", built against " OPENSSL_VERSION_TEXT))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_STATUS)) != NULL && !OSSL_PARAM_set_int(p, 1))
        return 0;
    if ((p = OSSL_PARAM_locate(params, "isola-offloaded")) != NULL && !OSSL_PARAM_set_uint64(p, st.offloaded))
        return 0;
    if ((p = OSSL_PARAM_locate(params, "isola-offloaded-bytes")) != NULL
        && !OSSL_PARAM_set_uint64(p, st.offloaded_bytes))
        return 0;
    if ((p = OSSL_PARAM_locate(params, "isola-local")) != NULL && !OSSL_PARAM_set_uint64(p, st.local))
        return 0;
    if ((p = OSSL_PARAM_locate(params, "isola-fallbacks")) != NULL && !OSSL_PARAM_set_uint64(p, fallbacks))
        return 0;
    if ((p = OSSL_PARAM_locate(params, "isola-stats")) != NULL) {
        char json[2048];

        isola_adapter_stats_json(prov->adapter, json, sizeof(json));
        if (!OSSL_PARAM_set_utf8_string(p, json))
            return 0;
    }
    return 1;
}

/* The algorithms of an operation; the core may cache them. */
static const OSSL_ALGORITHM *prov_query_operation(void *provctx, int operation_id, int *no_cache)
{
    (void)provctx;
    *no_cache = 0;
    switch (operation_id) {
    case OSSL_OP_DIGEST:
        return isola_digest_algorithms;
    case OSSL_OP_CIPHER:
        return isola_cipher_algorithms;
    default:
        return NULL;
    }
}

static const OSSL_DISPATCH prov_functions[] = {
    { OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))prov_teardown },
    { OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, (void (*)(void))prov_gettable_params },
    { OSSL_FUNC_PROVIDER_GET_PARAMS, (void (*)(void))prov_get_params },
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))prov_query_operation },
    { OSSL_FUNC_PROVIDER_GET_REASON_STRINGS, (void (*)(void))prov_get_reason_strings },
    { 0, NULL },
};

/* Reads the settings: the openssl.cnf section's keys, then the environment. */
static int prov_read_config(isola_prov *prov, OSSL_FUNC_core_get_params_fn *core_get_params,
                            isola_adapter_config *cfg)
{
    const char *values[N_CONFIG_KEYS] = { NULL };
    OSSL_PARAM params[N_CONFIG_KEYS + 1];
    char err[512];
    size_t i;

    isola_adapter_config_init(cfg);
    for (i = 0; i < N_CONFIG_KEYS; i++)
        params[i] = OSSL_PARAM_construct_utf8_ptr(config_keys[i], (char **)&values[i], 0);
    params[N_CONFIG_KEYS] = OSSL_PARAM_construct_end();
    if (core_get_params != NULL && !core_get_params(prov->handle, params)) {
        isola_prov_error(prov, ISOLA_R_BAD_CONFIG, "cannot read the provider's configuration");
        return 0;
    }
    for (i = 0; i < N_CONFIG_KEYS; i++) {
        if (values[i] != NULL && isola_adapter_config_set(cfg, config_keys[i], values[i], err, sizeof(err)) != 0) {
            isola_prov_error(prov, ISOLA_R_BAD_CONFIG, "openssl.cnf: %s", err);
            return 0;
        }
    }
    if (isola_adapter_config_env(cfg, err, sizeof(err)) != 0) {
        isola_prov_error(prov, ISOLA_R_BAD_CONFIG, "environment: %s", err);
        return 0;
    }
    return 1;
}

/* Makes the private library context and fetches the software algorithms. */
static int prov_load_software(isola_prov *prov)
{
    size_t i;

    prov->sw_libctx = OSSL_LIB_CTX_new();
    if (prov->sw_libctx == NULL)
        return 0;
    prov->sw_default = OSSL_PROVIDER_load(prov->sw_libctx, "default");
    if (prov->sw_default == NULL)
        return 0;
    for (i = 0; i < ISOLA_DIGESTS; i++)
        if ((prov->sw_md[i] = EVP_MD_fetch(prov->sw_libctx, isola_digests[i].sw_name, "provider=default")) == NULL)
            return 0;
    for (i = 0; i < ISOLA_CIPHERS; i++)
        if ((prov->sw_cipher[i] = EVP_CIPHER_fetch(prov->sw_libctx, isola_ciphers[i].sw_name, "provider=default"))
            == NULL)
            return 0;
    return 1;
}

/* The provider's entry point. */
int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in, const OSSL_DISPATCH **out,
                       void **provctx)
{
    OSSL_FUNC_core_get_params_fn *core_get_params = NULL;
    isola_adapter_config cfg;
    isola_prov *prov = OPENSSL_zalloc(sizeof(*prov));

    if (prov == NULL)
        return 0;
    pthread_mutex_init(&prov->idle_lock, NULL);
    prov->handle = handle;
    for (; in->function_id != 0; in++) {
        switch (in->function_id) {
        case OSSL_FUNC_CORE_GET_PARAMS:
            core_get_params = OSSL_FUNC_core_get_params(in);
            break;
        case OSSL_FUNC_CORE_NEW_ERROR:
            prov->core_new_error = OSSL_FUNC_core_new_error(in);
            break;
        case OSSL_FUNC_CORE_SET_ERROR_DEBUG:
            prov->core_set_error_debug = OSSL_FUNC_core_set_error_debug(in);
            break;
        case OSSL_FUNC_CORE_VSET_ERROR:
            prov->core_vset_error = OSSL_FUNC_core_vset_error(in);
            break;
        default:
            break;
        }
    }
    if (prov->core_new_error == NULL || prov->core_set_error_debug == NULL || prov->core_vset_error == NULL)
        prov->core_new_error = NULL; /* isola_prov_error needs all three */
    if (!prov_read_config(prov, core_get_params, &cfg))
        goto fail;
    if (!prov_load_software(prov)) {
        isola_prov_error(prov, ISOLA_R_SOFTWARE_FAILED, "cannot load the default provider in a private context");
        goto fail;
    }
    prov->adapter = isola_adapter_new("openssl", &cfg);
    if (prov->adapter == NULL) {
        isola_prov_error(prov, ISOLA_R_NO_MEMORY, "adapter");
        goto fail;
    }
    *out = prov_functions;
    *provctx = prov;
    return 1;
fail:
    prov_teardown(prov);
    return 0;
}
