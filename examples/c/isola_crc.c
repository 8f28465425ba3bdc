/*
 * isola_crc.c: a C tenant of isolad through libisola (include/isola.h).
 *
 * It attaches as a tenant, registers the crc32c operator, writes a few
 * inputs into buffers of its arena, submits them as one burst, progresses
 * the completions through a callback until all are in, checks each CRC
 * against its published value (exit 1 on a mismatch or any error), prints
 * them, reads its event ring, and destroys the context.
 *
 * Build (from the repository root; examples/c/README.md says more):
 *
 *   cargo build -p isola-capi
 *   cc -std=c11 -Wall -Wextra -I include examples/c/isola_crc.c \
 *      -L target/debug -lisola -o isola_crc
 *
 * Run against a running isolad that grants this user the tenant:
 *
 *   LD_LIBRARY_PATH=target/debug ./isola_crc /path/to/isolad.sock a
 */
#include "isola.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One input and what its CRC-32C must be (RFC 3720's and the catalogue's
 * check values). */
struct vector {
    const char *name;
    uint8_t data[64];
    size_t len;
    uint32_t expected;
    /* Filled in by the run. */
    isola_buf in, out;
    int done;
    uint32_t outcome, detail, crc;
    uint64_t output_len, service_ns;
};

#define N_VECTORS 7
static struct vector vectors[N_VECTORS];

/* The context, for check() to destroy on the way out. */
static isola_ctx *ctx;

/* Exits 1 with the call, its status and the library's message, unless it
 * succeeded. */
static void check(isola_status status, const char *call) {
    if (status == ISOLA_OK) {
        return;
    }
    char message[512];
    isola_last_error(message, sizeof message);
    fprintf(stderr, "isola_crc: %s: %s: %s\n", call, isola_status_name(status), message);
    if (ctx != NULL) {
        isola_destroy(ctx);
    }
    exit(1);
}
#define CHECK(call) check((call), #call)

static void text(struct vector *v, const char *s, uint32_t expected) {
    v->name = s;
    v->len = strlen(s);
    memcpy(v->data, s, v->len);
    v->expected = expected;
}

static void bytes(struct vector *v, const char *name, int first, int step, uint32_t expected) {
    v->name = name;
    v->len = 32;
    for (size_t i = 0; i < v->len; i++) {
        v->data[i] = (uint8_t)(first + step * (int)i);
    }
    v->expected = expected;
}

/* What the callback sees: the vectors, indexed by tag. */
struct run {
    size_t completed;
    int failures;
};

/* Called by isola_progress and isola_wait for each completion. It reads the
 * output right here: a callback may call the library on its context. */
static void on_completion(const isola_completion *c, void *arg) {
    struct run *run = arg;
    if (c->tag >= N_VECTORS || vectors[c->tag].done) {
        fprintf(stderr, "isola_crc: a completion for unknown tag %" PRIu64 "\n", c->tag);
        run->failures++;
        return;
    }
    struct vector *v = &vectors[c->tag];
    v->done = 1;
    v->outcome = c->outcome;
    v->detail = c->detail;
    v->output_len = c->output_len;
    v->service_ns = c->service_ns;
    if (c->outcome == ISOLA_OUTCOME_OK && c->output_len == 4) {
        uint8_t out[4];
        CHECK(isola_read(ctx, v->out.offset, out, sizeof out));
        /* The operator writes the CRC big-endian. */
        v->crc = (uint32_t)out[0] << 24 | (uint32_t)out[1] << 16 | (uint32_t)out[2] << 8 | out[3];
    }
    run->completed++;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s SOCKET TENANT\n", argv[0]);
        return 2;
    }
    text(&vectors[0], "123456789", 0xE3069283u);
    text(&vectors[1], "a", 0xC1D04330u);
    text(&vectors[2], "abc", 0x364B3FB7u);
    text(&vectors[3], "The quick brown fox jumps over the lazy dog", 0x22620404u);
    bytes(&vectors[4], "32 bytes of 0x00", 0, 0, 0x8A9136AAu);
    bytes(&vectors[5], "32 bytes of 0xff", 0xff, 0, 0x62A8AB43u);
    bytes(&vectors[6], "32 bytes 0x00, 0x01, ... 0x1f", 0, 1, 0x46DD794Eu);

    CHECK(isola_create(argv[1], argv[2], &ctx));
    isola_info info;
    CHECK(isola_get_info(ctx, &info));
    printf("attached as tenant `%s` (index %" PRIu32 "): arena %" PRIu64 " bytes, max input %" PRIu64
           " bytes\n",
           argv[2], info.tenant_index, info.arena_bytes, info.max_input);

    uint32_t crc32c;
    CHECK(isola_register(ctx, "crc32c", NULL, 0, &crc32c));

    isola_task tasks[N_VECTORS];
    for (size_t i = 0; i < N_VECTORS; i++) {
        struct vector *v = &vectors[i];
        CHECK(isola_buf_alloc(ctx, v->len, &v->in));
        CHECK(isola_buf_alloc(ctx, 4, &v->out));
        CHECK(isola_write(ctx, v->in.offset, v->data, v->len));
        tasks[i] = (isola_task){
            .op = crc32c,
            .input_offset = v->in.offset,
            .input_len = v->len,
            .output_offset = v->out.offset,
            .output_cap = v->out.len,
            .tag = i,
        };
    }

    /* The error model, shown: a task naming an operator never registered
     * is refused before anything is submitted. */
    isola_task stray = tasks[0];
    stray.op = crc32c + 1000;
    isola_status refused = isola_submit(ctx, &stray, 1, NULL);
    char message[256];
    isola_last_error(message, sizeof message);
    printf("a task with an unregistered handle: %s (%s)\n", isola_status_name(refused), message);
    if (refused != ISOLA_ERR_BAD_HANDLE) {
        fprintf(stderr, "isola_crc: expected ISOLA_ERR_BAD_HANDLE\n");
        isola_destroy(ctx);
        return 1;
    }

    /* One burst; a full ring takes the rest after some completions. */
    struct run run = {0, 0};
    size_t sent = 0;
    while (sent < N_VECTORS) {
        size_t n = 0;
        isola_status s = isola_submit(ctx, tasks + sent, N_VECTORS - sent, &n);
        sent += n;
        if (s == ISOLA_ERR_RING_FULL) {
            CHECK(isola_wait(ctx, on_completion, &run, 0, NULL));
        } else {
            CHECK(s);
        }
    }
    printf("submitted %d tasks in one burst\n", N_VECTORS);

    /* Poll; block only when nothing is ready (a wait also notices a daemon
     * that went away). */
    while (run.completed < N_VECTORS) {
        size_t got = 0;
        CHECK(isola_progress(ctx, on_completion, &run, 0, &got));
        if (got == 0 && run.completed < N_VECTORS) {
            CHECK(isola_wait(ctx, on_completion, &run, 0, NULL));
        }
    }

    int failures = run.failures;
    for (size_t i = 0; i < N_VECTORS; i++) {
        struct vector *v = &vectors[i];
        int ok = v->outcome == ISOLA_OUTCOME_OK && v->output_len == 4 && v->crc == v->expected;
        if (v->outcome != ISOLA_OUTCOME_OK) {
            printf("crc32c(%s): outcome %" PRIu32 " detail %" PRIu32 " MISMATCH\n", v->name, v->outcome,
                   v->detail);
        } else {
            printf("crc32c(%s) = 0x%08" PRIX32 " (expected 0x%08" PRIX32 ", service %" PRIu64 " ns) %s\n",
                   v->name, v->crc, v->expected, v->service_ns, ok ? "ok" : "MISMATCH");
        }
        failures += !ok;
        CHECK(isola_buf_free(ctx, v->in));
        CHECK(isola_buf_free(ctx, v->out));
    }

    isola_event events[16];
    size_t n_events = 0;
    CHECK(isola_events(ctx, events, 16, &n_events));
    for (size_t i = 0; i < n_events; i++) {
        printf("event kind %" PRIu32 " value %" PRIu64 "\n", events[i].kind, events[i].value);
    }

    CHECK(isola_destroy(ctx));
    ctx = NULL;
    if (failures > 0) {
        fprintf(stderr, "isola_crc: %d of %d results wrong\n", failures, N_VECTORS);
        return 1;
    }
    printf("all %d results match\n", N_VECTORS);
    return 0;
}
