/*
 * inflate.c: zlib's decompressing calls, interposed.
 *
 * uncompress/uncompress2 of a whole buffer and the first inflate
 * (Z_FINISH or Z_NO_FLUSH) of a fresh stream (a 32 KiB window in the
 * zlib, gzip, raw or auto format, nothing customised) become one
 * zlib-decompress task, which succeeds only when the input is exactly one
 * whole stream. Anything else, and any input the operator refuses
 * (corrupt, cut short, followed by more bytes), goes to the real libz
 * untouched: its answer, its partial output and its error are zlib's own.
 * The one offload path is core.c's zi_run_into.
 */
#include <stdlib.h>
#include <string.h>

#include "zlib_interposer.h"

/* The largest first guess at a stream's output (a larger output costs a
 * second task, sized exactly). The guess is 8 x the input + 64 KiB: text
 * deflates 3 to 8 times. */
#define ZI_GUESS_MAX ((size_t)16 << 20)

/* A little-endian 32-bit value. */
static uLong zi_le32(const unsigned char *p)
{
    return (uLong)p[0] | ((uLong)p[1] << 8) | ((uLong)p[2] << 16) | ((uLong)p[3] << 24);
}

/* Whether in[0..in_len) starts with gzip's magic. */
static int zi_is_gzip(const unsigned char *in, size_t in_len)
{
    return in_len >= 2 && in[0] == 0x1f && in[1] == 0x8b;
}

/* The room to offer for the output of a stream beyond `dest_room`: what
 * a gzip member's trailer says its length is, if deflate could have made
 * that much from in_len bytes (at most 1032 to 1); otherwise a guess. */
static size_t zi_rest_room(zi_format format, const unsigned char *in, size_t in_len,
                           size_t dest_room)
{
    size_t want = in_len * 8 + ((size_t)64 << 10);
    if (want > ZI_GUESS_MAX)
        want = ZI_GUESS_MAX;
    if (format == ZI_FORMAT_GZIP && in_len >= 18) {
        size_t isize = (size_t)zi_le32(in + in_len - 4);
        if (isize / 1032 <= in_len)
            want = isize;
    }
    return want > dest_room ? want - dest_room : 0;
}

/* The check value a whole stream ends with (zlib: Adler-32, big endian;
 * gzip: CRC-32, little endian, before the length): 1 with *check, or 0
 * for raw deflate. */
static int zi_input_check(zi_format format, const unsigned char *in, size_t in_len, uLong *check)
{
    if (format == ZI_FORMAT_ZLIB && in_len >= 6) {
        const unsigned char *p = in + in_len - 4;
        *check = ((uLong)p[0] << 24) | ((uLong)p[1] << 16) | ((uLong)p[2] << 8) | (uLong)p[3];
        return 1;
    }
    if (format == ZI_FORMAT_GZIP && in_len >= 18) {
        *check = zi_le32(in + in_len - 8);
        return 1;
    }
    return 0;
}

/* ---- one-shot calls ---- */

/* zlib's uncompress2: offloaded when the input is large enough; zlib's
 * own answer (the real call) for everything the operator does not turn
 * into exactly the output: too small a dest, corrupt data, bytes after
 * the stream. */
int uncompress2(Bytef *dest, uLongf *destLen, const Bytef *source, uLong *sourceLen)
{
    int r;
    int shaped = !zi_nested() && destLen != NULL && sourceLen != NULL && source != NULL &&
                 dest != NULL && *destLen > 0;
    if (shaped && zi_worth_offloading(ZI_WORK_DECOMPRESS, *sourceLen)) {
        zi_output o = {dest, *destLen, NULL, 0, 0};
        switch (zi_run_into(ZI_WORK_DECOMPRESS, ZI_FORMAT_ZLIB, 0, source, *sourceLen, &o, 0)) {
        case ZI_DONE:
            *destLen = (uLongf)o.len; /* and *sourceLen: all of it, one whole stream */
            return Z_OK;
        case ZI_FAIL:
            return ZI_FAIL_ONESHOT;
        default:
            break;
        }
    } else if (shaped) {
        zi_count_local(*sourceLen);
    }
    ZI_CALL_REAL(r, uncompress2, dest, destLen, source, sourceLen);
    return r;
}

/* zlib's uncompress: uncompress2 with the source length not reported. */
int uncompress(Bytef *dest, uLongf *destLen, const Bytef *source, uLong sourceLen)
{
    uLong len = sourceLen;
    return uncompress2(dest, destLen, source, &len);
}

/* ---- streams ---- */

/* zlib's inflateInit_, recording the fresh stream. */
int inflateInit_(z_streamp strm, const char *version, int stream_size)
{
    int outer = !zi_nested();
    int r;
    ZI_CALL_REAL(r, inflateInit_, strm, version, stream_size);
    if (r == Z_OK && outer)
        zi_stream_add(strm, ZI_INFLATER, 0, MAX_WBITS, 0, 0);
    return r;
}

/* zlib's inflateInit2_, recording the fresh stream and its window. */
int inflateInit2_(z_streamp strm, int windowBits, const char *version, int stream_size)
{
    int outer = !zi_nested();
    int r;
    ZI_CALL_REAL(r, inflateInit2_, strm, windowBits, version, stream_size);
    if (r == Z_OK && outer)
        zi_stream_add(strm, ZI_INFLATER, 0, windowBits, 0, 0);
    return r;
}

/* The real inflate. */
static int zi_inflate_real(z_streamp strm, int flush)
{
    int r;
    ZI_CALL_REAL(r, inflate, strm, flush);
    return r;
}

/* inflate's answer while an offloaded stream's output is handed out:
 * Z_STREAM_END at the end; otherwise, as zlib, Z_BUF_ERROR for Z_FINISH
 * or no progress, Z_OK for progress. */
static int zi_inflate_answer(const zi_stream *s, int flush, size_t handed)
{
    if (s->phase == ZI_ENDED)
        return Z_STREAM_END;
    return handed == 0 || flush == Z_FINISH ? Z_BUF_ERROR : Z_OK;
}

/* Offloads a fresh stream's first inflate: 1 with *ret if the call is
 * answered (done, or failed under ISOLA_FALLBACK=error), 0 if the real
 * inflate must run it (its state still untouched). */
static int zi_inflate_offload(z_streamp strm, zi_stream *s, zi_format format, int flush, int *ret)
{
    const unsigned char *in = strm->next_in;
    size_t in_len = strm->avail_in;
    zi_output o = {strm->next_out, strm->avail_out, NULL, 0, 0};
    if (format == ZI_FORMAT_AUTO)
        format = zi_is_gzip(in, in_len) ? ZI_FORMAT_GZIP : ZI_FORMAT_ZLIB;
    o.rest_room = zi_rest_room(format, in, in_len, o.dest_room);
    switch (zi_run_into(ZI_WORK_DECOMPRESS, format, 0, in, in_len, &o, 1)) {
    case ZI_DONE: {
        size_t first = o.len < o.dest_room ? o.len : o.dest_room;
        uLong check = 0;
        int has_check = zi_input_check(format, in, in_len, &check);
        zi_stream_take_over(strm, s, in_len, first, o.rest, o.len - first, check, has_check);
        *ret = zi_inflate_answer(s, flush, first > 0 ? first : 1);
        return 1;
    }
    case ZI_FAIL:
        strm->msg = zi_fail_message;
        *ret = ZI_FAIL_STREAM;
        return 1;
    default:
        return 0;
    }
}

/* A fresh stream's first inflate call: offloaded when it brings input
 * enough with Z_FINISH or Z_NO_FLUSH; otherwise (or when the input is not
 * exactly one stream) the stream is the real libz's from now. */
static int zi_inflate_first(z_streamp strm, zi_stream *s, int flush)
{
    zi_format format = zi_format_of(s->window_bits, 1);
    int r;
    /* calls zlib refuses without touching the stream leave it fresh */
    if (strm->next_out == NULL || (strm->next_in == NULL && strm->avail_in != 0))
        return zi_inflate_real(strm, flush);
    if ((flush == Z_FINISH || flush == Z_NO_FLUSH) && !s->customised &&
        format != ZI_FORMAT_NONE && strm->avail_out > 0 && strm->avail_in > 0 &&
        strm->total_in == 0 && zi_worth_offloading(ZI_WORK_DECOMPRESS, strm->avail_in)) {
        if (zi_inflate_offload(strm, s, format, flush, &r))
            return r;
    } else {
        zi_count_local(strm->avail_in);
    }
    s->phase = ZI_FORWARDED;
    return zi_inflate_real(strm, flush);
}

/* inflate on an offloaded stream: hands out the rest of its output, then
 * answers as zlib answers a finished stream (Z_STREAM_END, whatever the
 * input). */
static int zi_inflate_continue(z_streamp strm, zi_stream *s, int flush)
{
    if (strm->next_out == NULL || (strm->next_in == NULL && strm->avail_in != 0))
        return Z_STREAM_ERROR;
    if (s->phase == ZI_ENDED)
        return Z_STREAM_END;
    return zi_inflate_answer(s, flush, zi_stream_hand_out(strm, s));
}

/* zlib's inflate. */
int inflate(z_streamp strm, int flush)
{
    zi_stream *s = zi_nested() ? NULL : zi_stream_find(strm, ZI_INFLATER);
    if (s != NULL) {
        switch (s->phase) {
        case ZI_FRESH:
            return zi_inflate_first(strm, s, flush);
        case ZI_HANDING_OUT:
        case ZI_ENDED:
            return zi_inflate_continue(strm, s, flush);
        case ZI_FORWARDED:
            break;
        }
    }
    return zi_inflate_real(strm, flush);
}

/* zlib's inflateEnd, forgetting the stream. */
int inflateEnd(z_streamp strm)
{
    int r;
    ZI_CALL_REAL(r, inflateEnd, strm);
    zi_stream_remove(strm);
    return r;
}

/* Makes a stream fresh again after a successful reset; a reset with a new
 * window (inflateReset2) records it. */
static int zi_inflate_after_reset(z_streamp strm, int outer, int r, int set_window,
                                  int window_bits)
{
    zi_stream *s = outer && r == Z_OK ? zi_stream_find(strm, ZI_INFLATER) : NULL;
    if (s != NULL) {
        zi_stream_restart(s);
        if (set_window)
            s->window_bits = window_bits;
    }
    return r;
}

/* zlib's inflateReset. */
int inflateReset(z_streamp strm)
{
    int outer = !zi_nested();
    int r;
    ZI_CALL_REAL(r, inflateReset, strm);
    return zi_inflate_after_reset(strm, outer, r, 0, 0);
}

/* zlib's inflateReset2. */
int inflateReset2(z_streamp strm, int windowBits)
{
    int outer = !zi_nested();
    int r;
    ZI_CALL_REAL(r, inflateReset2, strm, windowBits);
    return zi_inflate_after_reset(strm, outer, r, 1, windowBits);
}

/* zlib's inflateResetKeep. */
int inflateResetKeep(z_streamp strm)
{
    int outer = !zi_nested();
    int r;
    ZI_CALL_REAL(r, inflateResetKeep, strm);
    return zi_inflate_after_reset(strm, outer, r, 0, 0);
}

/* The record of strm if it is in `phase` (taken over: handing out or ended). */
static zi_stream *zi_inflate_record(const z_stream *strm, int taken_over)
{
    zi_stream *s = zi_nested() ? NULL : zi_stream_find(strm, ZI_INFLATER);
    if (s == NULL)
        return NULL;
    if (taken_over)
        return s->phase == ZI_HANDING_OUT || s->phase == ZI_ENDED ? s : NULL;
    return s->phase == ZI_FRESH ? s : NULL;
}

/* Marks a fresh stream customised when a setup call succeeded. */
static int zi_inflate_customised(zi_stream *fresh, int r)
{
    if (fresh != NULL && r == Z_OK)
        fresh->customised = 1;
    return r;
}

/* zlib's inflateSetDictionary: a stream with a dictionary is the real
 * libz's; an offloaded one is past the point where zlib takes one. */
int inflateSetDictionary(z_streamp strm, const Bytef *dictionary, uInt dictLength)
{
    zi_stream *fresh = zi_inflate_record(strm, 0);
    int r;
    if (zi_inflate_record(strm, 1) != NULL)
        return Z_STREAM_ERROR;
    ZI_CALL_REAL(r, inflateSetDictionary, strm, dictionary, dictLength);
    return zi_inflate_customised(fresh, r);
}

/* zlib's inflatePrime: as inflateSetDictionary. */
int inflatePrime(z_streamp strm, int bits, int value)
{
    zi_stream *fresh = zi_inflate_record(strm, 0);
    int r;
    if (zi_inflate_record(strm, 1) != NULL)
        return Z_STREAM_ERROR;
    ZI_CALL_REAL(r, inflatePrime, strm, bits, value);
    return zi_inflate_customised(fresh, r);
}

/* zlib's inflateGetHeader: a stream whose gzip header the program wants
 * is the real libz's (on an offloaded one, as in zlib, the header has
 * gone by). */
int inflateGetHeader(z_streamp strm, gz_headerp head)
{
    zi_stream *fresh = zi_inflate_record(strm, 0);
    int r;
    ZI_CALL_REAL(r, inflateGetHeader, strm, head);
    return zi_inflate_customised(fresh, r);
}

/* zlib's inflateCopy: the copy carries the side state (and any waiting
 * output) with it. */
int inflateCopy(z_streamp dest, z_streamp source)
{
    zi_stream *s = zi_nested() ? NULL : zi_stream_find(source, ZI_INFLATER);
    int r;
    ZI_CALL_REAL(r, inflateCopy, dest, source);
    if (r != Z_OK || zi_nested())
        return r;
    if (s == NULL) {
        zi_stream_remove(dest);
    } else if (zi_stream_copy(dest, s) != 0) {
        ZI_CALL_REAL(r, inflateEnd, dest);
        return Z_MEM_ERROR;
    }
    return Z_OK;
}
