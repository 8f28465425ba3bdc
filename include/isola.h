/*
 * isola.h: libisola, the C ABI of an isolad tenant.
 *
 * This header is written by hand. It is the ABI of crates/isola-capi
 * (libisola.so, libisola.a); crates/isola-capi/tests/c_example.rs keeps the
 * two in step: it checks every function declared here is exported, every
 * export is declared here, the structures' sizes and offsets and every
 * constant's value against the library's, and builds and runs
 * examples/c/isola_crc.c against a real daemon. docs/daemon.md ("C ABI")
 * says how to build and link.
 *
 * The shape is an accelerator SDK's (DOCA's context, tasks and progress
 * engine; DPDK's queue pair and bursts):
 *
 *   isola_create       connect to isolad and attach as a tenant
 *   isola_register     an operator by name and parameters: its handle
 *   isola_buf_alloc    a buffer: a range of the tenant's arena
 *   isola_write/read   copy bytes into and out of the arena
 *   isola_submit       a burst of tasks
 *   isola_progress     deliver ready completions to a callback (no block)
 *   isola_wait         the same, blocking for at least one
 *   isola_wait_for     the same, blocking at most a time limit
 *   isola_events       read the tenant's event ring
 *   isola_destroy      detach and free the context
 *
 * The contract. Every function but isola_status_name and isola_last_error
 * returns an isola_status: ISOLA_OK, or what went wrong; on failure the
 * thread keeps a message for humans (isola_last_error), cleared by its next
 * call. Nothing panics or unwinds into C. Outputs are written only on
 * success, except the counts (submitted, done), which say how far a call
 * got. A pointer to n items may be NULL when n is 0; any other NULL pointer
 * is ISOLA_ERR_NULL. A context handle that is not live (destroyed, made up)
 * is ISOLA_ERR_BAD_CONTEXT, never undefined behaviour: handles are keys,
 * not addresses, and never reused.
 *
 * Ownership and lifetimes. The library hands out no pointer into memory it
 * frees: buffers are arena offsets, data is copied in and out, a completion
 * passed to a callback lives through the call only, status names are
 * static. Strings and arrays passed in are read during the call only. A
 * context may be used from several threads; calls on it take turns (a
 * thread blocked in isola_wait holds it). A callback may call the library,
 * on the same context too. Destroying a context while another thread uses
 * it is safe: that call finishes first.
 */
#ifndef ISOLA_H
#define ISOLA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A call's result. */
typedef enum isola_status {
    ISOLA_OK = 0,
    ISOLA_ERR_NULL = 1,          /* a pointer that must not be NULL was */
    ISOLA_ERR_BAD_CONTEXT = 2,   /* not a live context (made up, destroyed) */
    ISOLA_ERR_BAD_HANDLE = 3,    /* an operator handle not registered here */
    ISOLA_ERR_BAD_BUFFER = 4,    /* a buffer not allocated here (or freed) */
    ISOLA_ERR_OUT_OF_ARENA = 5,  /* a byte range not inside the arena */
    ISOLA_ERR_NO_MEMORY = 6,     /* no free block that large in the arena */
    ISOLA_ERR_INVALID = 7,       /* not UTF-8, reserved flags, a 0 length */
    ISOLA_ERR_CONNECT = 8,       /* isolad could not be reached */
    ISOLA_ERR_REFUSED = 9,       /* isolad refused to attach us as the tenant */
    ISOLA_ERR_FAILED = 10,       /* isolad refused a request (registration) */
    ISOLA_ERR_RING_FULL = 11,    /* submission ring full: progress, resubmit */
    ISOLA_ERR_IDLE = 12,         /* nothing in flight: a wait would not end */
    ISOLA_ERR_DISCONNECTED = 13, /* isolad went away (stopped, drained) */
    ISOLA_ERR_PROTOCOL = 14,     /* isolad broke the protocol */
    ISOLA_ERR_INTERNAL = 15,     /* a bug in libisola, caught */
    ISOLA_ERR_TIMEOUT = 16       /* no completion within isola_wait_for's limit */
} isola_status;

/* How a task ended: isola_completion.outcome (isola_wire's codes; a newer
 * daemon may send one not named here). */
typedef enum isola_outcome {
    ISOLA_OUTCOME_OK = 0,              /* done: the output is in the arena */
    ISOLA_OUTCOME_REJECTED = 1,        /* the scheduler refused it */
    ISOLA_OUTCOME_OPERATOR_FAILED = 2, /* the operator refused or failed */
    ISOLA_OUTCOME_BAD_ENTRY = 3,       /* the task itself was malformed */
    ISOLA_OUTCOME_CANCELLED = 4,       /* cancelled before it ran */
    ISOLA_OUTCOME_ABANDONED = 5        /* running when the drain ended */
} isola_outcome;

/* isola_completion.detail of ISOLA_OUTCOME_REJECTED. */
#define ISOLA_REJECTED_CHANNEL_FULL 1u
#define ISOLA_REJECTED_OVER_QUOTA 2u
#define ISOLA_REJECTED_NO_ENGINE 3u
#define ISOLA_REJECTED_OTHER 4u
/* ... of ISOLA_OUTCOME_OPERATOR_FAILED (for OUTPUT_TOO_LARGE, output_len
 * is the room it needed). */
#define ISOLA_FAILED_OPERATOR 1u
#define ISOLA_FAILED_OUTPUT_TOO_LARGE 2u
#define ISOLA_FAILED_PANICKED 3u
#define ISOLA_FAILED_OVER_BUDGET 4u /* stopped at its tenant's budget */
/* ... of ISOLA_OUTCOME_BAD_ENTRY. */
#define ISOLA_BAD_ENTRY_UNKNOWN_HANDLE 1u
#define ISOLA_BAD_ENTRY_UNKNOWN_FLAGS 2u
#define ISOLA_BAD_ENTRY_INPUT_OUTSIDE 3u
#define ISOLA_BAD_ENTRY_OUTPUT_OUTSIDE 4u
#define ISOLA_BAD_ENTRY_OVERLAP 5u
#define ISOLA_BAD_ENTRY_TOO_LARGE 6u

/* What an event says: isola_event.kind. */
typedef enum isola_event_kind {
    ISOLA_EVENT_OVER_BUDGET = 1,    /* a task ran over budget (value: tag) */
    ISOLA_EVENT_QUOTA_EXCEEDED = 2, /* a task over the memory quota (tag) */
    ISOLA_EVENT_CHANNEL_FULL = 3,   /* a task found its channel full (tag) */
    ISOLA_EVENT_SLO_CHANGED = 4,    /* the operator changed our SLO */
    ISOLA_EVENT_DRAINING = 5,       /* isolad drains: no new tasks taken */
    ISOLA_EVENT_KERNEL_ABORTED = 6, /* a packet kernel was stopped (value: flow,
                                       detail: 1 out of fuel, 2 trap, 3 memory
                                       cap, 5 output too large, 6 bad pointer,
                                       7 bad DMA offset, 9 packet too large) */
    ISOLA_EVENT_HOST_WRITTEN = 7    /* a packet kernel's DMA write landed in the
                                       host window (value: offset, detail: len) */
} isola_event_kind;

/* Buffers start on (and are rounded up to) this many bytes. */
#define ISOLA_ALIGN 64u

/* A context: an opaque handle, never dereferenced. */
typedef struct isola_ctx isola_ctx;

/* What a context is attached as. */
typedef struct isola_info {
    uint32_t tenant_index; /* the tenant's index in isolad */
    uint32_t reserved;     /* 0 */
    uint64_t arena_bytes;  /* the arena: the tenant's memory quota */
    uint64_t max_input;    /* the largest input of one task */
} isola_info;

/* A buffer: a range of the arena (an offset, not an address). */
typedef struct isola_buf {
    uint64_t offset;
    uint64_t len;
} isola_buf;

/* An operator parameter (NUL-terminated UTF-8). */
typedef struct isola_param {
    const char *key;
    const char *value;
} isola_param;

/* A task: run operator `op` on input_len bytes at input_offset, writing at
 * most output_cap bytes at output_offset (arena offsets); `tag` comes back
 * on its completion (a pointer may travel in it as (uintptr_t)p). */
typedef struct isola_task {
    uint32_t op;    /* a handle from isola_register on this context */
    uint32_t flags; /* reserved: 0 */
    uint64_t input_offset;
    uint64_t input_len;
    uint64_t output_offset;
    uint64_t output_cap;
    uint64_t tag;
} isola_task;

/* A task's completion; times in ns on the daemon's clock. */
typedef struct isola_completion {
    uint64_t tag;
    uint32_t outcome;    /* an isola_outcome */
    uint32_t detail;     /* ISOLA_REJECTED_*, ISOLA_FAILED_*, ... or 0 */
    uint64_t output_len; /* bytes written at the task's output_offset */
    uint64_t arrival_ns;
    uint64_t dispatch_ns; /* 0 if never dispatched */
    uint64_t completion_ns;
    uint64_t predicted_ns; /* predicted service time */
    uint64_t service_ns;   /* measured service time */
} isola_completion;

/* An event from the tenant's event ring. */
typedef struct isola_event {
    uint32_t kind;     /* an isola_event_kind */
    uint32_t reserved; /* 0 */
    uint64_t value;    /* its subject (a tag) or value */
    uint64_t detail;
    uint64_t at_ns;
} isola_event;

/* Called once per completion; `c` lives through the call only. It may
 * call the library, on this context too. */
typedef void (*isola_completion_cb)(const isola_completion *c, void *arg);

/* Connects to isolad's socket and attaches as `tenant` (the daemon checks
 * this process's uid and gid); the context goes to *out (NULL on failure). */
isola_status isola_create(const char *socket_path, const char *tenant, isola_ctx **out);

/* As isola_create, waiting at most timeout_ns for isolad's answer to the
 * attach and to each later request of the context (isola_register,
 * isola_host_window): ISOLA_ERR_TIMEOUT when a daemon hangs. */
isola_status isola_create_timed(const char *socket_path, const char *tenant, uint64_t timeout_ns,
                                isola_ctx **out);

/* Detaches (isolad finishes and discards tasks in flight) and frees the
 * context; its handle is dead from now on. Buffers need not be freed. */
isola_status isola_destroy(isola_ctx *ctx);

/* What the context is attached as, and its limits. */
isola_status isola_get_info(const isola_ctx *ctx, isola_info *out);

/* How long isola_wait polls (ns) before it sleeps (default 50 us). */
isola_status isola_set_spin(const isola_ctx *ctx, uint64_t spin_ns);

/* Registers operator `op` (see `isola op --list`) with n_params parameters;
 * its handle goes to *handle. */
isola_status isola_register(const isola_ctx *ctx, const char *op, const isola_param *params,
                            size_t n_params, uint32_t *handle);

/* A buffer of `len` bytes of the arena (offset aligned to ISOLA_ALIGN). A
 * convenience: tasks may name any range of the arena. */
isola_status isola_buf_alloc(const isola_ctx *ctx, uint64_t len, isola_buf *out);

/* Makes `buf` the tenant's host window: its packet kernels' DMA writes land
 * there (host offset 0 at buf.offset), each told as ISOLA_EVENT_HOST_WRITTEN.
 * A buf of len 0 withdraws it; one outside the arena is refused. */
isola_status isola_host_window(const isola_ctx *ctx, isola_buf buf);

/* Gives back a buffer isola_buf_alloc returned (same offset and len). */
isola_status isola_buf_free(const isola_ctx *ctx, isola_buf buf);

/* Copies `len` bytes from `data` into the arena at `offset`. */
isola_status isola_write(const isola_ctx *ctx, uint64_t offset, const void *data, size_t len);

/* Copies `len` bytes of the arena at `offset` to `out`. */
isola_status isola_read(const isola_ctx *ctx, uint64_t offset, void *out, size_t len);

/* Submits n tasks in order, telling isolad once. All are checked first
 * (registered handle, flags 0, ranges inside the arena): one bad task and
 * none is submitted. A full ring stops the burst with ISOLA_ERR_RING_FULL;
 * the first *submitted were submitted. `submitted` may be NULL. */
isola_status isola_submit(const isola_ctx *ctx, const isola_task *tasks, size_t n,
                          size_t *submitted);

/* Calls cb(c, arg) for up to `max` ready completions (0: all ready), no
 * blocking; *done (may be NULL) says how many. It does not notice a daemon
 * that went away; isola_wait does: poll, and wait when nothing is ready. */
isola_status isola_progress(const isola_ctx *ctx, isola_completion_cb cb, void *arg, size_t max,
                            size_t *done);

/* As isola_progress, blocking until at least one completion: ISOLA_ERR_IDLE
 * if no task is in flight, ISOLA_ERR_DISCONNECTED if isolad goes away. */
isola_status isola_wait(const isola_ctx *ctx, isola_completion_cb cb, void *arg, size_t max,
                        size_t *done);

/* As isola_wait, waiting at most timeout_ns: ISOLA_ERR_TIMEOUT if no
 * completion came by then. */
isola_status isola_wait_for(const isola_ctx *ctx, isola_completion_cb cb, void *arg, size_t max,
                            uint64_t timeout_ns, size_t *done);

/* Why a call meant for isolad ran in the caller's process instead (an
 * adapter's fallback: the OpenSSL provider, the zlib interposer). */
typedef enum isola_fallback_reason {
    ISOLA_FALLBACK_UNCONFIGURED = 0, /* no tenant configured */
    ISOLA_FALLBACK_ABSENT = 1,       /* isolad could not be reached */
    ISOLA_FALLBACK_REFUSED = 2,      /* isolad refused to attach us as the tenant */
    ISOLA_FALLBACK_OVER_QUOTA = 3,   /* the task was rejected: memory quota */
    ISOLA_FALLBACK_CHANNEL_FULL = 4, /* the task was rejected: the tenant's channel is full */
    ISOLA_FALLBACK_RING_FULL = 5,    /* the submission ring stayed full */
    ISOLA_FALLBACK_NO_ARENA = 6,     /* no room in the arena for the task's buffers */
    ISOLA_FALLBACK_DISCONNECTED = 7, /* isolad went away during the call */
    ISOLA_FALLBACK_TIMEOUT = 8,      /* no completion within the adapter's time limit */
    ISOLA_FALLBACK_FAILED = 9,       /* any other failure (rejected otherwise, cancelled, ...) */
    ISOLA_FALLBACK_REASONS = 10
} isola_fallback_reason;

/* Tells isolad that `count` calls meant for it ran in this process
 * instead, for `reason` (an isola_fallback_reason; others count as
 * FAILED): its metric isola_tenant_fallbacks_total{reason} counts them.
 * Nothing is awaited. */
isola_status isola_report_fallbacks(const isola_ctx *ctx, uint32_t reason, uint64_t count);

/* Copies up to `cap` events to `out`; *n says how many. */
isola_status isola_events(const isola_ctx *ctx, isola_event *out, size_t cap, size_t *n);

/* The status's name ("ISOLA_ERR_NULL"), or "ISOLA_STATUS_UNKNOWN"; static. */
const char *isola_status_name(int status);

/* Copies this thread's last error message into buf (NUL-terminated,
 * truncated to cap bytes) and returns its full length (0: no error). */
size_t isola_last_error(char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* ISOLA_H */
