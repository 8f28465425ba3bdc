/*
 * provider.h: what the isola OpenSSL provider's files share.
 *
 * provider.c holds the provider (its entry point, settings, errors, the
 * algorithm tables and the private software library context), digest.c the
 * one digest implementation every digest uses, gcm.c the one AES-GCM
 * implementation both key sizes use. docs/applications.md says why it works as it does.
 */
#ifndef ISOLA_OPENSSL_PROVIDER_H
#define ISOLA_OPENSSL_PROVIDER_H

#include <pthread.h>
#include <stddef.h>

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/evp.h>

#include "isola_adapter.h"

/* The digests, by index into the provider's tables. */
enum isola_digest_id { ISOLA_SHA256, ISOLA_SHA1, ISOLA_SHA3_256, ISOLA_MD5, ISOLA_DIGESTS };

/* The ciphers, by index. */
enum isola_cipher_id { ISOLA_AES_128_GCM, ISOLA_AES_256_GCM, ISOLA_CIPHERS };

/* A digest's constants. */
typedef struct isola_digest_info {
    const char *sw_name;     /* its name in the default provider */
    const char *op;          /* isolad's operator */
    size_t size;             /* the digest's length */
    size_t block_size;       /* its block size */
    size_t default_min_bytes; /* the measured crossover: shorter messages stay local */
    int algid_absent;        /* its AlgorithmIdentifier has no parameters */
} isola_digest_info;

/* A cipher's constants. */
typedef struct isola_cipher_info {
    const char *sw_name;      /* its name in the default provider */
    size_t key_len;           /* bytes */
    size_t default_min_bytes; /* the measured crossover */
} isola_cipher_info;

extern const isola_digest_info isola_digests[ISOLA_DIGESTS];
extern const isola_cipher_info isola_ciphers[ISOLA_CIPHERS];

/* Idle software digest contexts kept for reuse, per digest. */
#define ISOLA_IDLE_TWINS 8

/* The provider's context (provctx): one per load of the provider. */
typedef struct isola_prov {
    const OSSL_CORE_HANDLE *handle;
    OSSL_FUNC_core_new_error_fn *core_new_error;
    OSSL_FUNC_core_set_error_debug_fn *core_set_error_debug;
    OSSL_FUNC_core_vset_error_fn *core_vset_error;
    OSSL_LIB_CTX *sw_libctx;  /* private: the default provider only, never us */
    OSSL_PROVIDER *sw_default;
    EVP_MD *sw_md[ISOLA_DIGESTS];
    EVP_CIPHER *sw_cipher[ISOLA_CIPHERS];
    isola_adapter *adapter;
    pthread_mutex_t idle_lock; /* only ever try-locked: a fork cannot leave it blocking */
    EVP_MD_CTX *idle_md[ISOLA_DIGESTS][ISOLA_IDLE_TWINS];
    size_t n_idle_md[ISOLA_DIGESTS];
} isola_prov;

/* The provider's error reasons (its reason strings are in provider.c). */
enum isola_reason {
    ISOLA_R_OFFLOAD_FAILED = 1, /* isolad could not run the call and fallback = error */
    ISOLA_R_SOFTWARE_FAILED,    /* the software twin failed */
    ISOLA_R_NO_MEMORY,          /* out of memory */
    ISOLA_R_BAD_STATE,          /* a call out of order (final twice, ...) */
    ISOLA_R_BAD_CONFIG,         /* a setting that does not parse */
    ISOLA_R_OUTPUT_TOO_SMALL    /* the caller's output buffer is too small */
};

/* Raises an error of the provider's library with `reason` and a message. */
void isola_prov_error(const isola_prov *prov, int reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The input length from which an algorithm is offloaded: min_bytes when
 * set, else the algorithm's measured crossover. */
size_t isola_prov_min_bytes(const isola_prov *prov, size_t default_min_bytes);

/* Whether a failed offload must fail the call (fallback = error). */
int isola_prov_fallback_is_error(const isola_prov *prov);

/* Frees the idle software digest contexts (at teardown). */
void isola_digest_free_idle(isola_prov *prov);

/* The digests' and ciphers' algorithm tables (NULL-terminated). */
extern const OSSL_ALGORITHM isola_digest_algorithms[];
extern const OSSL_ALGORITHM isola_cipher_algorithms[];

#endif /* ISOLA_OPENSSL_PROVIDER_H */
