/*
 * isola_adapter.h: what the OpenSSL provider and the zlib interposer share.
 *
 * An adapter slips under an unmodified program (an OpenSSL provider, an
 * LD_PRELOAD interposer) and sends the program's calls to isolad as one
 * tenant: this file is the piece both use. It holds the process's one
 * attachment to isolad through libisola (include/isola.h), made on first
 * use, made again after a fork (a child never uses its parent's
 * connection) and after isolad went away (at most once per `retry_ms`);
 * it runs one task at a time, synchronously, with a bounded wait; and it
 * counts what ran where: offloaded, kept local by choice (small or
 * unsupported), and every fallback by its reason (isola_fallback_reason,
 * in isola.h), reported to isolad
 * (its metric isola_tenant_fallbacks_total) when it is up.
 *
 * What it must not do: decide what to offload (the adapters do), hash or
 * compress anything itself, or block longer than `timeout_ms`.
 *
 * Settings: isola_adapter_config_init gives the defaults, then the
 * adapter's own configuration (openssl.cnf) through isola_adapter_config_set,
 * then the environment through isola_adapter_config_env, which overrides:
 *
 *   key          environment         default
 *   socket       ISOLA_SOCKET        /run/isola/isolad.sock
 *   tenant       ISOLA_TENANT        (none: every call runs locally, counted as `unconfigured`)
 *   fallback     ISOLA_FALLBACK      software  (software | error)
 *   timeout_ms   ISOLA_TIMEOUT_MS    2000      (one call's longest wait for its completion)
 *   retry_ms     ISOLA_RETRY_MS      1000      (after isolad could not be reached)
 *   min_bytes    ISOLA_MIN_BYTES     -1        (-1: the adapter's measured per-algorithm crossover;
 *                                               otherwise inputs below it run locally)
 *
 * ISOLA_STATS=stderr or ISOLA_STATS=PATH writes each adapter's counters as
 * one JSON line when the process exits (appended to PATH).
 *
 * Thread safety: an adapter may be used from several threads; its calls
 * take turns (one task in flight per process and adapter).
 */
#ifndef ISOLA_ADAPTER_H
#define ISOLA_ADAPTER_H

#include <stddef.h>
#include <stdint.h>

#include "isola.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Each adapter links its own copy of this layer: its symbols stay inside
 * the adapter's shared object, so a process that loads both adapters (a
 * Python program using hashlib and zlib) keeps two apart, neither
 * resolving to the other's. */
#define ISOLA_ADAPTER_API __attribute__((visibility("hidden")))

/* What a call that could not run on isolad does. */
typedef enum isola_fallback_mode {
    ISOLA_FALLBACK_SOFTWARE = 0, /* finish it in software, in the calling process */
    ISOLA_FALLBACK_ERROR = 1     /* fail it with the API's own error code */
} isola_fallback_mode;

/* Settings (see the table above). */
typedef struct isola_adapter_config {
    char socket[4096];
    char tenant[256];
    isola_fallback_mode fallback;
    uint64_t timeout_ms;
    uint64_t retry_ms;
    int64_t min_bytes;
} isola_adapter_config;

/* The defaults. */
ISOLA_ADAPTER_API void isola_adapter_config_init(isola_adapter_config *cfg);

/* Sets `key` (socket, tenant, fallback, timeout_ms, retry_ms, min_bytes)
 * from its text. 0, or -1 with a message naming the key and the value in
 * err (NUL-terminated, at most cap bytes). */
ISOLA_ADAPTER_API int isola_adapter_config_set(isola_adapter_config *cfg, const char *key, const char *value, char *err,
                             size_t cap);

/* Applies the ISOLA_* environment variables over cfg. 0, or -1 with a
 * message naming the variable in err. */
ISOLA_ADAPTER_API int isola_adapter_config_env(isola_adapter_config *cfg, char *err, size_t cap);

/* An adapter: its settings, its attachment (made on first use), its counters. */
typedef struct isola_adapter isola_adapter;

/* A new adapter named `name` ("openssl", "zlib": the stats' label) with a
 * copy of cfg. It does not connect. NULL only if out of memory. */
ISOLA_ADAPTER_API isola_adapter *isola_adapter_new(const char *name, const isola_adapter_config *cfg);

/* Detaches and frees (writes the ISOLA_STATS line first, once). */
ISOLA_ADAPTER_API void isola_adapter_free(isola_adapter *a);

/* Its settings. */
ISOLA_ADAPTER_API const isola_adapter_config *isola_adapter_config_of(const isola_adapter *a);

/* A piece of a task's input, or of where its output goes. */
typedef struct isola_in_piece {
    const void *data;
    size_t len;
} isola_in_piece;
typedef struct isola_out_piece {
    void *data;
    size_t len;
} isola_out_piece;

/* What isola_adapter_run did. */
typedef enum isola_run_status {
    ISOLA_RUN_DONE = 0,      /* ran on isolad: the output was written */
    ISOLA_RUN_OP_FAILED = 1, /* ran on isolad, and the operator refused the input (corrupt data,
                                output over the room given): result.detail says which; nothing
                                counted as a fallback, the caller decides */
    ISOLA_RUN_FALLBACK = 2   /* did not run on isolad: result.reason says why, counted (and told to
                                isolad when it is up); run it locally, or fail if fallback = error */
} isola_run_status;

typedef struct isola_run_result {
    size_t output_len;            /* DONE: bytes written over the output pieces, in order */
    uint32_t detail;              /* OP_FAILED: ISOLA_FAILED_* (OUTPUT_TOO_LARGE: output_len is the room needed) */
    isola_fallback_reason reason; /* FALLBACK */
} isola_run_result;

/* Runs operator `op` (registered once per process with these parameters,
 * then cached) on the concatenation of the n_in input pieces, its output
 * written over the n_out output pieces in order (their total is the
 * output's room). Blocks at most timeout_ms for the completion. */
ISOLA_ADAPTER_API isola_run_status isola_adapter_run(isola_adapter *a, const char *op, const isola_param *params,
                                   size_t n_params, const isola_in_piece *in, size_t n_in,
                                   const isola_out_piece *out, size_t n_out, isola_run_result *result);

/* Counts a call the adapter chose to run locally (below min_bytes, or a
 * shape it does not offload), of `bytes` input bytes. */
ISOLA_ADAPTER_API void isola_adapter_count_local(isola_adapter *a, uint64_t bytes);

/* The counters. */
typedef struct isola_adapter_stats {
    uint64_t offloaded;       /* calls that ran on isolad (DONE or OP_FAILED) */
    uint64_t offloaded_bytes; /* their input bytes */
    uint64_t local;           /* calls run locally by choice */
    uint64_t local_bytes;
    uint64_t fallbacks[ISOLA_FALLBACK_REASONS]; /* by reason */
} isola_adapter_stats;

ISOLA_ADAPTER_API void isola_adapter_stats_get(isola_adapter *a, isola_adapter_stats *out);

/* The counters as one JSON object (NUL-terminated, truncated to cap);
 * its full length. */
ISOLA_ADAPTER_API size_t isola_adapter_stats_json(isola_adapter *a, char *buf, size_t cap);

/* "absent", "over-quota", ...: the reason's name (static), or "unknown". */
ISOLA_ADAPTER_API const char *isola_fallback_reason_name(int reason);

#ifdef __cplusplus
}
#endif

#endif /* ISOLA_ADAPTER_H */
