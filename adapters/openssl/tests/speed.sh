#!/bin/sh
# speed.sh: `openssl speed` with and without the isola provider, one size
# at a time, in one sitting (docs/perf.md, "Unmodified applications").
#
#   ISOLA_SOCKET=... ISOLA_TENANT=... \
#     adapters/openssl/tests/speed.sh PROVIDER_DIR [SECONDS] [SIZES] [ALGORITHMS]
#
# SIZES: bytes, space-separated (default 64 to 64 KiB); ALGORITHMS: `speed`
# arguments, comma-separated (default: the four digests with -evp, both
# GCMs with -aead, the per-message sequence, and aes-256-gcm streamed).
# Columns, in 1000s of bytes per second of elapsed time (-elapsed: an
# offloaded call waits rather than computes, so CPU time would flatter it):
#   software  without the provider;
#   offload   the provider, min_bytes 0: every call goes to isolad;
#   provider  the provider with its default thresholds;
# and offload/software. After each algorithm, its crossover: the size at
# which the work done in software costs as much as one round trip to
# isolad, round_trip x software rate, with the round trip taken from the
# smallest size offloaded (its time per call) and the software rate from
# the largest.
set -eu
dir=${1:?usage: speed.sh PROVIDER_DIR [SECONDS] [SIZES] [ALGORITHMS]}
secs=${2:-1}
sizes=${3:-64 128 256 512 1024 2048 4096 8192 16384 32768 65536}
algs=${4:-"-evp sha256,-evp sha1,-evp sha3-256,-evp md5,-aead -evp aes-128-gcm,-aead -evp aes-256-gcm,-evp aes-256-gcm"}
provider="-provider-path $dir -provider isola -provider default -propquery ?provider=isola"

# The rate of one run: the last field of speed's last line, without its k.
rate() {
    # shellcheck disable=SC2086 # the arguments are words on purpose
    openssl speed -elapsed -seconds "$secs" "$@" 2>/dev/null | tail -n 1 | awk '{ sub(/k$/, "", $NF); print $NF }'
}

printf '%-24s %8s %14s %14s %14s %8s\n' algorithm bytes software offload provider ratio
echo "$algs" | tr ',' '\n' | while read -r alg; do
    round_trip=""
    for n in $sizes; do
        # shellcheck disable=SC2086
        sw=$(rate -bytes "$n" $alg)
        # shellcheck disable=SC2086
        off=$(ISOLA_MIN_BYTES=0 rate -bytes "$n" $provider $alg)
        # shellcheck disable=SC2086
        def=$(ISOLA_MIN_BYTES=-1 rate -bytes "$n" $provider $alg)
        printf '%-24s %8s %14s %14s %14s %8s\n' "$alg" "$n" "$sw" "$off" "$def" \
            "$(awk -v a="$off" -v b="$sw" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
        # seconds per call at the smallest size; the software rate in bytes/s
        [ -n "$round_trip" ] || round_trip=$(awk -v n="$n" -v r="$off" 'BEGIN { print (r > 0) ? n / (r * 1000) : 0 }')
        sw_rate=$(awk -v r="$sw" 'BEGIN { print r * 1000 }')
    done
    awk -v t="$round_trip" -v r="$sw_rate" -v alg="$alg" \
        'BEGIN { printf "%-24s crossover: round trip %.1f us x software %.0f MB/s = %.0f bytes\n", alg, t * 1e6, r / 1e6, t * r }'
done
