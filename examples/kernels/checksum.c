/* checksum: replies with the Internet checksum (RFC 1071) of the packet,
 * two bytes in network order. A C packet kernel for Isola: build with
 *   clang --target=wasm32 -O2 -nostdlib -Wl,--no-entry -Wl,--export-dynamic \
 *         -o checksum.wasm checksum.c
 * (the imports come from module "isola": see docs/kernels.md). */
#include <stdint.h>

__attribute__((import_module("isola"), import_name("reply")))
void reply(const void *ptr, int32_t len);

/* Room for the largest UDP payload. */
static uint8_t packet[65536];

__attribute__((export_name("packet_buffer")))
int32_t packet_buffer(int32_t len) {
    (void)len;
    return (int32_t)(uintptr_t)packet;
}

__attribute__((export_name("process")))
int32_t process(const uint8_t *p, int32_t len) {
    uint32_t sum = 0;
    int32_t i = 0;
    for (; i + 1 < len; i += 2)
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    if (i < len)
        sum += (uint32_t)p[i] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    uint16_t check = (uint16_t)~sum;
    uint8_t out[2] = {(uint8_t)(check >> 8), (uint8_t)check};
    reply(out, 2);
    return 0;
}
