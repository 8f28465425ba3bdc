/*
 * checksum.c: zlib's CRC-32 and Adler-32, interposed.
 *
 * A buffer of at least the threshold is summed on isolad from the
 * checksum's initial value (crc32 from 0, adler32 from 1); a running value
 * is carried over with the real crc32_combine / adler32_combine, so the
 * answer is zlib's for every start value. A checksum cannot fail: whatever
 * goes wrong on the way (and whatever ISOLA_FALLBACK says) the real
 * function answers.
 */
#include "zlib_interposer.h"

/* The real checksum `work` of buf[0..len) continuing from `start`. */
static uLong zi_checksum_real(zi_work work, uLong start, const Bytef *buf, z_size_t len)
{
    uLong r;
    if (work == ZI_WORK_CRC32)
        ZI_CALL_REAL(r, crc32_z, start, buf, len);
    else
        ZI_CALL_REAL(r, adler32_z, start, buf, len);
    return r;
}

/* The one path of both checksums: `work` of buf[0..len) continuing from
 * `start`, offloaded when large enough. */
static uLong zi_checksum(zi_work work, uLong start, const Bytef *buf, z_size_t len)
{
    uLong initial = work == ZI_WORK_CRC32 ? 0 : 1;
    uLong value;
    if (buf == NULL || zi_nested() || len == 0)
        return zi_checksum_real(work, start, buf, len);
    if (!zi_worth_offloading(work, len)) {
        zi_count_local(len);
        return zi_checksum_real(work, start, buf, len);
    }
    if (!zi_checksum_offload(work, buf, len, &value))
        return zi_checksum_real(work, start, buf, len);
    /* both functions read only the low 32 bits of a start value */
    start &= 0xffffffffUL;
    if (start == initial)
        return value;
    if (work == ZI_WORK_CRC32)
        return crc32_combine(start, value, (z_off_t)len);
    return adler32_combine(start, value, (z_off_t)len);
}

/* zlib's crc32. */
uLong crc32(uLong crc, const Bytef *buf, uInt len)
{
    return zi_checksum(ZI_WORK_CRC32, crc, buf, len);
}

/* zlib's crc32_z. */
uLong crc32_z(uLong crc, const Bytef *buf, z_size_t len)
{
    return zi_checksum(ZI_WORK_CRC32, crc, buf, len);
}

/* zlib's adler32. */
uLong adler32(uLong adler, const Bytef *buf, uInt len)
{
    return zi_checksum(ZI_WORK_ADLER32, adler, buf, len);
}

/* zlib's adler32_z. */
uLong adler32_z(uLong adler, const Bytef *buf, z_size_t len)
{
    return zi_checksum(ZI_WORK_ADLER32, adler, buf, len);
}
