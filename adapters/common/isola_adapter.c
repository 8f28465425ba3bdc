/*
 * isola_adapter.c: the attachment, the one-task call and the counters the
 * OpenSSL provider and the zlib interposer share (isola_adapter.h says
 * what each function promises).
 *
 * One adapter holds at most one libisola context, attached lazily as the
 * configured tenant. A task's buffers are allocated in the tenant's arena
 * for the call and freed when its completion comes; a task whose wait ran
 * out keeps its buffers ("stale") until its completion arrives on a later
 * call, since isolad may still write its output there. A failure that
 * means the connection is gone drops the context: the next call attaches
 * again (after a fork, the child attaches its own; it never touches the
 * parent's).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "isola_adapter.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* An operator registered on the context, by its name and parameters. */
struct registered {
    char *key; /* op, then "\n" key "=" value per parameter */
    uint32_t handle;
};

/* A task whose wait ran out: its buffers, freed when its completion comes. */
struct stale_task {
    uint64_t tag;
    isola_buf in, out;
};

/* Registered operators kept per context; past this, the oldest is
 * forgotten (registered again if used again). */
#define MAX_REGISTERED 64
/* Stale tasks kept; past this, no new task is submitted until some end. */
#define MAX_STALE 64
/* Adapters alive in the process, for the exit-time stats. */
#define MAX_ADAPTERS 8

struct isola_adapter {
    char name[32];
    isola_adapter_config cfg;
    pthread_mutex_t lock;
    isola_ctx *ctx;      /* NULL: not attached */
    pid_t pid;           /* the process that attached ctx */
    uint64_t max_input;  /* isolad's largest task input, from the attach */
    uint64_t retry_at;   /* monotonic ns: no attach attempt before this */
    int last_miss;       /* why the last attach failed (an isola_fallback_reason) */
    struct registered registered[MAX_REGISTERED];
    size_t n_registered;
    struct stale_task stale[MAX_STALE];
    size_t n_stale;
    uint64_t next_tag;
    /* The counters have a lock of their own: a call counted as local
     * never waits behind another thread's offloaded task. */
    pthread_mutex_t stats_lock;
    isola_adapter_stats stats;
    uint64_t unreported[ISOLA_FALLBACK_REASONS]; /* fallbacks isolad was not told of yet (under `lock`) */
    int stats_written;
};

static pthread_mutex_t adapters_lock = PTHREAD_MUTEX_INITIALIZER;
static isola_adapter *adapters[MAX_ADAPTERS];
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static const char *const REASON_NAMES[ISOLA_FALLBACK_REASONS] = {
    "unconfigured", "absent",       "refused", "over_quota", "channel_full",
    "ring_full",    "no_arena",     "disconnected", "timeout", "failed",
};

const char *isola_fallback_reason_name(int reason) {
    if (reason < 0 || reason >= ISOLA_FALLBACK_REASONS) {
        return "unknown";
    }
    return REASON_NAMES[reason];
}

/* Monotonic nanoseconds. */
static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- settings ---- */

void isola_adapter_config_init(isola_adapter_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->socket, sizeof cfg->socket, "%s", "/run/isola/isolad.sock");
    cfg->fallback = ISOLA_FALLBACK_SOFTWARE;
    cfg->timeout_ms = 2000;
    cfg->retry_ms = 1000;
    cfg->min_bytes = -1;
}

/* Parses a whole decimal integer in [lo, hi] into *out; 0, or -1. */
static int parse_integer(const char *text, long long lo, long long hi, long long *out) {
    if (text == NULL || *text == '\0') {
        return -1;
    }
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Copies `value` into the fixed field `field` of `cap` bytes; -1 if it does not fit. */
static int set_text(char *field, size_t cap, const char *value) {
    size_t n = strlen(value);
    if (n >= cap) {
        return -1;
    }
    memcpy(field, value, n + 1);
    return 0;
}

int isola_adapter_config_set(isola_adapter_config *cfg, const char *key, const char *value, char *err,
                             size_t cap) {
    long long v = 0;
    const char *expected = NULL;
    if (key == NULL || value == NULL) {
        expected = "a key and a value";
    } else if (strcmp(key, "socket") == 0) {
        if (value[0] == '\0' || set_text(cfg->socket, sizeof cfg->socket, value) != 0) {
            expected = "a path of 1 to 4095 bytes";
        }
    } else if (strcmp(key, "tenant") == 0) {
        if (set_text(cfg->tenant, sizeof cfg->tenant, value) != 0) {
            expected = "a tenant name of at most 255 bytes";
        }
    } else if (strcmp(key, "fallback") == 0) {
        if (strcmp(value, "software") == 0) {
            cfg->fallback = ISOLA_FALLBACK_SOFTWARE;
        } else if (strcmp(value, "error") == 0) {
            cfg->fallback = ISOLA_FALLBACK_ERROR;
        } else {
            expected = "software or error";
        }
    } else if (strcmp(key, "timeout_ms") == 0) {
        if (parse_integer(value, 1, 3600000, &v) == 0) {
            cfg->timeout_ms = (uint64_t)v;
        } else {
            expected = "milliseconds, 1 to 3600000";
        }
    } else if (strcmp(key, "retry_ms") == 0) {
        if (parse_integer(value, 0, 3600000, &v) == 0) {
            cfg->retry_ms = (uint64_t)v;
        } else {
            expected = "milliseconds, 0 to 3600000";
        }
    } else if (strcmp(key, "min_bytes") == 0) {
        if (parse_integer(value, -1, (long long)1 << 40, &v) == 0) {
            cfg->min_bytes = v;
        } else {
            expected = "bytes, or -1 for the measured default";
        }
    } else {
        if (err != NULL && cap > 0) {
            snprintf(err, cap,
                     "unknown key `%s`: expected socket, tenant, fallback, timeout_ms, retry_ms or "
                     "min_bytes",
                     key);
        }
        return -1;
    }
    if (expected != NULL) {
        if (err != NULL && cap > 0) {
            snprintf(err, cap, "`%s` = \"%s\": expected %s", key ? key : "(null)", value ? value : "(null)",
                     expected);
        }
        return -1;
    }
    return 0;
}

int isola_adapter_config_env(isola_adapter_config *cfg, char *err, size_t cap) {
    static const char *const vars[][2] = {
        {"ISOLA_SOCKET", "socket"},         {"ISOLA_TENANT", "tenant"},
        {"ISOLA_FALLBACK", "fallback"},     {"ISOLA_TIMEOUT_MS", "timeout_ms"},
        {"ISOLA_RETRY_MS", "retry_ms"},     {"ISOLA_MIN_BYTES", "min_bytes"},
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *value = getenv(vars[i][0]);
        if (value == NULL) {
            continue;
        }
        char inner[512];
        if (isola_adapter_config_set(cfg, vars[i][1], value, inner, sizeof inner) != 0) {
            if (err != NULL && cap > 0) {
                snprintf(err, cap, "environment variable %s: %s", vars[i][0], inner);
            }
            return -1;
        }
    }
    return 0;
}

/* ---- the adapters of the process, for exit and fork ---- */

static void write_stats(isola_adapter *a);

/* At exit: every live adapter's stats line. */
static void write_all_stats(void) {
    pthread_mutex_lock(&adapters_lock);
    for (size_t i = 0; i < MAX_ADAPTERS; i++) {
        if (adapters[i] != NULL) {
            write_stats(adapters[i]);
        }
    }
    pthread_mutex_unlock(&adapters_lock);
}

/* In a forked child: forget the parent's connection (never used or
 * detached here: it is the parent's), its counters and any lock a
 * parent's thread held at the fork. */
static void forget_parent(void) {
    pthread_mutex_init(&adapters_lock, NULL);
    for (size_t i = 0; i < MAX_ADAPTERS; i++) {
        isola_adapter *a = adapters[i];
        if (a == NULL) {
            continue;
        }
        pthread_mutex_init(&a->lock, NULL);
        pthread_mutex_init(&a->stats_lock, NULL);
        a->ctx = NULL;
        for (size_t r = 0; r < a->n_registered; r++) {
            free(a->registered[r].key);
        }
        a->n_registered = 0;
        a->n_stale = 0;
        a->retry_at = 0;
        memset(&a->stats, 0, sizeof a->stats);
        memset(a->unreported, 0, sizeof a->unreported);
        a->stats_written = 0;
    }
}

static void install_hooks(void) {
    atexit(write_all_stats);
    pthread_atfork(NULL, NULL, forget_parent);
}

isola_adapter *isola_adapter_new(const char *name, const isola_adapter_config *cfg) {
    pthread_once(&hooks_once, install_hooks);
    isola_adapter *a = calloc(1, sizeof *a);
    if (a == NULL) {
        return NULL;
    }
    snprintf(a->name, sizeof a->name, "%s", name ? name : "adapter");
    a->cfg = *cfg;
    pthread_mutex_init(&a->lock, NULL);
    pthread_mutex_init(&a->stats_lock, NULL);
    a->next_tag = 1;
    pthread_mutex_lock(&adapters_lock);
    for (size_t i = 0; i < MAX_ADAPTERS; i++) {
        if (adapters[i] == NULL) {
            adapters[i] = a;
            break;
        }
    }
    pthread_mutex_unlock(&adapters_lock);
    return a;
}

const isola_adapter_config *isola_adapter_config_of(const isola_adapter *a) {
    return &a->cfg;
}

/* Drops the context (after isolad went away, or at the end): the next
 * call attaches again. Stale tasks' buffers go with the arena. */
static void detach(isola_adapter *a) {
    if (a->ctx != NULL && a->pid == getpid()) {
        isola_destroy(a->ctx);
    }
    a->ctx = NULL;
    for (size_t r = 0; r < a->n_registered; r++) {
        free(a->registered[r].key);
    }
    a->n_registered = 0;
    a->n_stale = 0;
}

void isola_adapter_free(isola_adapter *a) {
    if (a == NULL) {
        return;
    }
    pthread_mutex_lock(&adapters_lock);
    for (size_t i = 0; i < MAX_ADAPTERS; i++) {
        if (adapters[i] == a) {
            adapters[i] = NULL;
        }
    }
    write_stats(a);
    pthread_mutex_unlock(&adapters_lock);
    detach(a);
    pthread_mutex_destroy(&a->lock);
    pthread_mutex_destroy(&a->stats_lock);
    free(a);
}

/* ---- counters ---- */

size_t isola_adapter_stats_json(isola_adapter *a, char *buf, size_t cap) {
    isola_adapter_stats s;
    isola_adapter_stats_get(a, &s);
    char fallbacks[512];
    size_t at = 0;
    for (int r = 0; r < ISOLA_FALLBACK_REASONS; r++) {
        int n = snprintf(fallbacks + at, sizeof fallbacks - at, "%s\"%s\":%" PRIu64, r ? "," : "",
                         REASON_NAMES[r], s.fallbacks[r]);
        if (n < 0 || (size_t)n >= sizeof fallbacks - at) {
            break;
        }
        at += (size_t)n;
    }
    int n = snprintf(buf, cap,
                     "{\"adapter\":\"%s\",\"pid\":%ld,\"tenant\":\"%s\",\"offloaded\":%" PRIu64
                     ",\"offloaded_bytes\":%" PRIu64 ",\"local\":%" PRIu64 ",\"local_bytes\":%" PRIu64
                     ",\"fallbacks\":{%s}}",
                     a->name, (long)getpid(), a->cfg.tenant, s.offloaded, s.offloaded_bytes, s.local,
                     s.local_bytes, fallbacks);
    return n < 0 ? 0 : (size_t)n;
}

/* Writes the stats line where ISOLA_STATS says, once. */
static void write_stats(isola_adapter *a) {
    const char *where = getenv("ISOLA_STATS");
    if (where == NULL || *where == '\0' || a->stats_written) {
        return;
    }
    a->stats_written = 1;
    char line[1024];
    size_t n = isola_adapter_stats_json(a, line, sizeof line - 1);
    if (n >= sizeof line - 1) {
        n = sizeof line - 2;
    }
    line[n++] = '\n';
    int fd = strcmp(where, "stderr") == 0 ? 2 : open(where, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        return;
    }
    /* One write: lines of several processes appended to one file do not interleave. */
    ssize_t written = write(fd, line, n);
    (void)written;
    if (fd != 2) {
        close(fd);
    }
}

void isola_adapter_stats_get(isola_adapter *a, isola_adapter_stats *out) {
    pthread_mutex_lock(&a->stats_lock);
    *out = a->stats;
    pthread_mutex_unlock(&a->stats_lock);
}

void isola_adapter_count_local(isola_adapter *a, uint64_t bytes) {
    pthread_mutex_lock(&a->stats_lock);
    a->stats.local++;
    a->stats.local_bytes += bytes;
    pthread_mutex_unlock(&a->stats_lock);
}

/* Counts a call that ran on isolad. */
static void count_offloaded(isola_adapter *a, uint64_t bytes) {
    pthread_mutex_lock(&a->stats_lock);
    a->stats.offloaded++;
    a->stats.offloaded_bytes += bytes;
    pthread_mutex_unlock(&a->stats_lock);
}

/* Counts a fallback, and tells isolad (with any not told yet) when
 * attached. The adapter's lock is held. */
static void count_fallback(isola_adapter *a, isola_fallback_reason reason) {
    pthread_mutex_lock(&a->stats_lock);
    a->stats.fallbacks[reason]++;
    pthread_mutex_unlock(&a->stats_lock);
    a->unreported[reason]++;
    if (a->ctx == NULL) {
        return;
    }
    for (int r = 0; r < ISOLA_FALLBACK_REASONS; r++) {
        if (a->unreported[r] > 0 && isola_report_fallbacks(a->ctx, (uint32_t)r, a->unreported[r]) == ISOLA_OK) {
            a->unreported[r] = 0;
        }
    }
}

/* ---- the attachment ---- */

/* Attaches if not attached (and not waiting out retry_ms): 1, or 0 with
 * the reason in *why. */
static int attach(isola_adapter *a, isola_fallback_reason *why) {
    if (a->cfg.tenant[0] == '\0') {
        *why = ISOLA_FALLBACK_UNCONFIGURED;
        return 0;
    }
    if (a->ctx != NULL && a->pid == getpid()) {
        return 1;
    }
    a->ctx = NULL;
    uint64_t now = now_ns();
    if (now < a->retry_at) {
        *why = (isola_fallback_reason)a->last_miss;
        return 0;
    }
    isola_ctx *ctx = NULL;
    isola_status st = isola_create_timed(a->cfg.socket, a->cfg.tenant, a->cfg.timeout_ms * 1000000u, &ctx);
    isola_info info;
    if (st == ISOLA_OK && isola_get_info(ctx, &info) != ISOLA_OK) {
        isola_destroy(ctx);
        st = ISOLA_ERR_PROTOCOL;
    }
    if (st != ISOLA_OK) {
        a->last_miss = st == ISOLA_ERR_REFUSED   ? ISOLA_FALLBACK_REFUSED
                       : st == ISOLA_ERR_TIMEOUT ? ISOLA_FALLBACK_TIMEOUT
                                                 : ISOLA_FALLBACK_ABSENT;
        a->retry_at = now + a->cfg.retry_ms * 1000000u;
        *why = (isola_fallback_reason)a->last_miss;
        return 0;
    }
    a->ctx = ctx;
    a->pid = getpid();
    a->max_input = info.max_input;
    return 1;
}

/* The handle of `op` with `params` on the context, registered on first
 * use: 1, or 0 with the reason in *why. */
static int handle_of(isola_adapter *a, const char *op, const isola_param *params, size_t n_params,
                     uint32_t *handle, isola_fallback_reason *why) {
    size_t len = strlen(op) + 1;
    for (size_t i = 0; i < n_params; i++) {
        len += strlen(params[i].key) + strlen(params[i].value) + 3;
    }
    char *key = malloc(len);
    if (key == NULL) {
        *why = ISOLA_FALLBACK_FAILED;
        return 0;
    }
    size_t at = (size_t)snprintf(key, len, "%s", op);
    for (size_t i = 0; i < n_params; i++) {
        at += (size_t)snprintf(key + at, len - at, "\n%s=%s", params[i].key, params[i].value);
    }
    for (size_t r = 0; r < a->n_registered; r++) {
        if (strcmp(a->registered[r].key, key) == 0) {
            *handle = a->registered[r].handle;
            free(key);
            return 1;
        }
    }
    isola_status st = isola_register(a->ctx, op, params, n_params, handle);
    if (st != ISOLA_OK) {
        free(key);
        if (st == ISOLA_ERR_TIMEOUT) {
            /* A reply may still come, out of turn: start afresh. */
            detach(a);
            *why = ISOLA_FALLBACK_TIMEOUT;
        } else if (st == ISOLA_ERR_DISCONNECTED || st == ISOLA_ERR_PROTOCOL) {
            detach(a);
            *why = ISOLA_FALLBACK_DISCONNECTED;
        } else {
            *why = ISOLA_FALLBACK_FAILED;
        }
        return 0;
    }
    if (a->n_registered == MAX_REGISTERED) {
        free(a->registered[0].key);
        memmove(a->registered, a->registered + 1, (MAX_REGISTERED - 1) * sizeof a->registered[0]);
        a->n_registered--;
    }
    a->registered[a->n_registered++] = (struct registered){key, *handle};
    return 1;
}

/* ---- one task ---- */

/* What the completion callback looks for, and what it found. */
struct awaited {
    isola_adapter *a;
    uint64_t tag;
    int done;
    isola_completion completion;
};

/* Takes our task's completion; frees a stale task's buffers. */
static void on_completion(const isola_completion *c, void *arg) {
    struct awaited *w = arg;
    if (c->tag == w->tag) {
        w->completion = *c;
        w->done = 1;
        return;
    }
    isola_adapter *a = w->a;
    for (size_t i = 0; i < a->n_stale; i++) {
        if (a->stale[i].tag == c->tag) {
            isola_buf_free(a->ctx, a->stale[i].in);
            isola_buf_free(a->ctx, a->stale[i].out);
            a->stale[i] = a->stale[--a->n_stale];
            return;
        }
    }
}

/* The fallback reason of a failed libisola call on the context; drops
 * the context when the connection is gone. */
static isola_fallback_reason reason_of(isola_adapter *a, isola_status st) {
    switch (st) {
    case ISOLA_ERR_NO_MEMORY:
    case ISOLA_ERR_OUT_OF_ARENA:
    case ISOLA_ERR_INVALID:
        return ISOLA_FALLBACK_NO_ARENA;
    case ISOLA_ERR_RING_FULL:
        return ISOLA_FALLBACK_RING_FULL;
    case ISOLA_ERR_TIMEOUT:
        return ISOLA_FALLBACK_TIMEOUT;
    case ISOLA_ERR_DISCONNECTED:
    case ISOLA_ERR_PROTOCOL:
    case ISOLA_ERR_BAD_CONTEXT:
    case ISOLA_ERR_INTERNAL:
        detach(a);
        return ISOLA_FALLBACK_DISCONNECTED;
    default:
        return ISOLA_FALLBACK_FAILED;
    }
}

/* The fallback reason of a completion that did not run the operator. */
static isola_fallback_reason reason_of_completion(const isola_completion *c) {
    if (c->outcome == ISOLA_OUTCOME_REJECTED && c->detail == ISOLA_REJECTED_OVER_QUOTA) {
        return ISOLA_FALLBACK_OVER_QUOTA;
    }
    if (c->outcome == ISOLA_OUTCOME_REJECTED && c->detail == ISOLA_REJECTED_CHANNEL_FULL) {
        return ISOLA_FALLBACK_CHANNEL_FULL;
    }
    if (c->outcome == ISOLA_OUTCOME_BAD_ENTRY && c->detail == ISOLA_BAD_ENTRY_TOO_LARGE) {
        return ISOLA_FALLBACK_NO_ARENA;
    }
    return ISOLA_FALLBACK_FAILED;
}

/* Copies the output (output_len bytes at `from` in the arena) over the
 * output pieces; 0, or an isola_status. */
static isola_status read_output(isola_adapter *a, uint64_t from, size_t len, const isola_out_piece *out,
                                size_t n_out) {
    for (size_t i = 0; i < n_out && len > 0; i++) {
        size_t n = out[i].len < len ? out[i].len : len;
        if (n > 0) {
            isola_status st = isola_read(a->ctx, from, out[i].data, n);
            if (st != ISOLA_OK) {
                return st;
            }
        }
        from += n;
        len -= n;
    }
    return ISOLA_OK;
}

/* Waits (at most until `deadline`) for the completion of `w->tag`:
 * ISOLA_OK with w->done set, or why not. */
static isola_status await(isola_adapter *a, struct awaited *w, uint64_t deadline) {
    while (!w->done) {
        uint64_t now = now_ns();
        if (now >= deadline) {
            return ISOLA_ERR_TIMEOUT;
        }
        isola_status st = isola_wait_for(a->ctx, on_completion, w, 0, deadline - now, NULL);
        if (st != ISOLA_OK) {
            return st;
        }
    }
    return ISOLA_OK;
}

/* Submits `task`; a full ring (stale tasks in it) waits for room until
 * `deadline`. */
static isola_status submit(isola_adapter *a, const isola_task *task, struct awaited *w, uint64_t deadline) {
    for (;;) {
        isola_status st = isola_submit(a->ctx, task, 1, NULL);
        if (st != ISOLA_ERR_RING_FULL) {
            return st;
        }
        uint64_t now = now_ns();
        if (now >= deadline) {
            return ISOLA_ERR_RING_FULL;
        }
        st = isola_wait_for(a->ctx, on_completion, w, 0, deadline - now, NULL);
        if (st == ISOLA_ERR_TIMEOUT || st == ISOLA_ERR_IDLE) {
            return ISOLA_ERR_RING_FULL;
        }
        if (st != ISOLA_OK) {
            return st;
        }
    }
}

/* The run itself, the lock held: DONE or OP_FAILED, or 0 with *why. */
static int run_locked(isola_adapter *a, const char *op, const isola_param *params, size_t n_params,
                      const isola_in_piece *in, size_t n_in, const isola_out_piece *out, size_t n_out,
                      isola_run_result *result, isola_fallback_reason *why) {
    uint64_t total_in = 0, room = 0;
    for (size_t i = 0; i < n_in; i++) {
        total_in += in[i].len;
    }
    for (size_t i = 0; i < n_out; i++) {
        room += out[i].len;
    }
    uint32_t handle = 0;
    if (!attach(a, why) || !handle_of(a, op, params, n_params, &handle, why)) {
        return 0;
    }
    if (total_in > a->max_input || a->n_stale == MAX_STALE) {
        *why = a->n_stale == MAX_STALE ? ISOLA_FALLBACK_TIMEOUT : ISOLA_FALLBACK_NO_ARENA;
        return 0;
    }
    struct awaited w = {.a = a, .tag = a->next_tag++};
    /* Completions of stale tasks that came meanwhile free their buffers. */
    isola_progress(a->ctx, on_completion, &w, 0, NULL);
    isola_buf in_buf, out_buf;
    isola_status st = isola_buf_alloc(a->ctx, total_in ? total_in : 1, &in_buf);
    if (st != ISOLA_OK) {
        *why = reason_of(a, st);
        return 0;
    }
    st = isola_buf_alloc(a->ctx, room ? room : 1, &out_buf);
    if (st != ISOLA_OK) {
        isola_buf_free(a->ctx, in_buf);
        *why = reason_of(a, st);
        return 0;
    }
    uint64_t at = in_buf.offset;
    for (size_t i = 0; i < n_in && st == ISOLA_OK; i++) {
        if (in[i].len > 0) {
            st = isola_write(a->ctx, at, in[i].data, in[i].len);
        }
        at += in[i].len;
    }
    isola_task task = {
        .op = handle,
        .input_offset = in_buf.offset,
        .input_len = total_in,
        .output_offset = out_buf.offset,
        .output_cap = room,
        .tag = w.tag,
    };
    uint64_t deadline = now_ns() + a->cfg.timeout_ms * 1000000u;
    if (st == ISOLA_OK) {
        st = submit(a, &task, &w, deadline);
    }
    if (st == ISOLA_OK) {
        st = await(a, &w, deadline);
        if (st == ISOLA_ERR_TIMEOUT && a->ctx != NULL) {
            /* isolad may still write its output: keep the buffers until it ends. */
            a->stale[a->n_stale++] = (struct stale_task){w.tag, in_buf, out_buf};
            *why = ISOLA_FALLBACK_TIMEOUT;
            return 0;
        }
    }
    if (st != ISOLA_OK) {
        if (a->ctx != NULL) {
            isola_buf_free(a->ctx, in_buf);
            isola_buf_free(a->ctx, out_buf);
        }
        *why = reason_of(a, st);
        return 0;
    }
    const isola_completion *c = &w.completion;
    int status = 0;
    if (c->outcome == ISOLA_OUTCOME_OK && c->output_len <= room) {
        st = read_output(a, out_buf.offset, (size_t)c->output_len, out, n_out);
        if (st == ISOLA_OK) {
            result->output_len = (size_t)c->output_len;
            status = ISOLA_RUN_DONE + 1;
        } else {
            *why = reason_of(a, st);
        }
    } else if (c->outcome == ISOLA_OUTCOME_OPERATOR_FAILED &&
               (c->detail == ISOLA_FAILED_OPERATOR || c->detail == ISOLA_FAILED_OUTPUT_TOO_LARGE)) {
        result->detail = c->detail;
        result->output_len = (size_t)c->output_len;
        status = ISOLA_RUN_OP_FAILED + 1;
    } else {
        *why = reason_of_completion(c);
    }
    if (a->ctx != NULL) {
        isola_buf_free(a->ctx, in_buf);
        isola_buf_free(a->ctx, out_buf);
    }
    if (status != 0) {
        count_offloaded(a, total_in);
    }
    return status;
}

isola_run_status isola_adapter_run(isola_adapter *a, const char *op, const isola_param *params,
                                   size_t n_params, const isola_in_piece *in, size_t n_in,
                                   const isola_out_piece *out, size_t n_out, isola_run_result *result) {
    memset(result, 0, sizeof *result);
    pthread_mutex_lock(&a->lock);
    isola_fallback_reason why = ISOLA_FALLBACK_FAILED;
    int status = run_locked(a, op, params, n_params, in, n_in, out, n_out, result, &why);
    if (status == 0) {
        result->reason = why;
        count_fallback(a, why);
    }
    pthread_mutex_unlock(&a->lock);
    return status == 0 ? ISOLA_RUN_FALLBACK : (isola_run_status)(status - 1);
}
