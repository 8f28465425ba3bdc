/*
 * adapter_probe.c: drives adapters/common/isola_adapter.c as an adapter
 * does, for its tests (crates/isola-capi/tests/adapter_common.rs).
 *
 *   adapter_probe [--room N] [--repeat N] [--gap MS] OP [KEY=VALUE ...] < INPUT > OUTPUT
 *
 * Settings come from the environment (ISOLA_SOCKET, ISOLA_TENANT, ...).
 * It runs OP with the parameters on the whole of stdin, --repeat times
 * (default 1), --gap milliseconds apart (default 0), with --room bytes of output room (default: the input's
 * length + 64); writes the last output to stdout and one line per run to
 * stderr: "done N", "op-failed DETAIL N" or "fallback REASON", then the
 * counters as JSON. Exits 0 if every run was done on isolad, 1 otherwise,
 * 2 on bad usage.
 */
#include "isola_adapter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PARAMS 16

/* Reads all of stdin; its length in *len. */
static unsigned char *read_all(size_t *len) {
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n, stdin);
        if (n < cap) {
            break;
        }
        unsigned char *bigger = realloc(buf, cap * 2);
        if (bigger == NULL) {
            free(buf);
            return NULL;
        }
        buf = bigger;
        cap *= 2;
    }
    *len = n;
    return buf;
}

int main(int argc, char **argv) {
    size_t room = (size_t)-1;
    long repeat = 1, gap_ms = 0;
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--room") == 0) {
            room = (size_t)strtoull(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--gap") == 0) {
            gap_ms = strtol(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--repeat") == 0) {
            repeat = strtol(argv[i + 1], NULL, 10);
        } else {
            fprintf(stderr, "adapter_probe: unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    if (i >= argc || argc - i - 1 > MAX_PARAMS) {
        fprintf(stderr, "usage: adapter_probe [--room N] [--repeat N] [--gap MS] OP [KEY=VALUE ...]\n");
        return 2;
    }
    const char *op = argv[i++];
    isola_param params[MAX_PARAMS];
    size_t n_params = 0;
    for (; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq == NULL) {
            fprintf(stderr, "adapter_probe: parameter %s is not KEY=VALUE\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        params[n_params++] = (isola_param){argv[i], eq + 1};
    }
    isola_adapter_config cfg;
    isola_adapter_config_init(&cfg);
    char err[512];
    if (isola_adapter_config_env(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "adapter_probe: %s\n", err);
        return 2;
    }
    size_t len = 0;
    unsigned char *input = read_all(&len);
    if (room == (size_t)-1) {
        room = len + 64;
    }
    unsigned char *output = malloc(room ? room : 1);
    isola_adapter *a = isola_adapter_new("probe", &cfg);
    if (input == NULL || output == NULL || a == NULL) {
        fprintf(stderr, "adapter_probe: out of memory\n");
        return 2;
    }
    /* Two input pieces and two output pieces: the gather and scatter are tested too. */
    isola_in_piece in[2] = {{input, len / 2}, {input + len / 2, len - len / 2}};
    isola_out_piece out[2] = {{output, room / 3}, {output + room / 3, room - room / 3}};
    int all_done = 1;
    size_t last_len = 0;
    for (long r = 0; r < repeat; r++) {
        if (r > 0 && gap_ms > 0) {
            struct timespec gap = {gap_ms / 1000, (gap_ms % 1000) * 1000000L};
            nanosleep(&gap, NULL);
        }
        isola_run_result result;
        isola_run_status st = isola_adapter_run(a, op, params, n_params, in, 2, out, 2, &result);
        if (st == ISOLA_RUN_DONE) {
            fprintf(stderr, "done %zu\n", result.output_len);
            last_len = result.output_len;
        } else if (st == ISOLA_RUN_OP_FAILED) {
            fprintf(stderr, "op-failed %u %zu\n", result.detail, result.output_len);
            all_done = 0;
        } else {
            fprintf(stderr, "fallback %s\n", isola_fallback_reason_name((int)result.reason));
            all_done = 0;
        }
    }
    fwrite(output, 1, last_len, stdout);
    char json[1024];
    isola_adapter_stats_json(a, json, sizeof json);
    fprintf(stderr, "%s\n", json);
    isola_adapter_free(a);
    free(input);
    free(output);
    return all_done ? 0 : 1;
}
