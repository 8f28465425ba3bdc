/*
 * streams.c: the interposer's side state of each z_stream, and the
 * hand-out of an offloaded stream's output.
 *
 * A table keyed by the z_stream's address (zlib's state points back at
 * its z_stream and refuses a moved one, so the address names the stream
 * for its whole life), guarded by one mutex that a fork leaves unlocked.
 * A record is read and changed without the lock by the thread that owns
 * the stream: zlib streams are not shared between threads.
 *
 * Hand-out: an offloaded call gets the whole stream's output at once.
 * What fits goes to next_out; the rest waits here and later calls hand it
 * out, as zlib hands out output it could not flush. The input is reported
 * consumed in proportion to the output handed out, all of it with the
 * last byte: avail_in stays nonzero and avail_out zero while output
 * waits, so every loop that drives zlib (on avail_out, on avail_in, or
 * on the return code) comes back for the rest.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "zlib_interposer.h"

/* The table's buckets (chains); a power of two. */
#define ZI_BUCKETS 4096u

static zi_stream *zi_buckets[ZI_BUCKETS];
static pthread_mutex_t zi_table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t zi_fork_once = PTHREAD_ONCE_INIT;

/* Takes the table's lock before a fork, so the child never inherits it held. */
static void zi_before_fork(void)
{
    pthread_mutex_lock(&zi_table_lock);
}

/* Releases it after the fork, in the parent and in the child. */
static void zi_after_fork(void)
{
    pthread_mutex_unlock(&zi_table_lock);
}

/* Registers the fork handlers (once). */
static void zi_register_fork(void)
{
    pthread_atfork(zi_before_fork, zi_after_fork, zi_after_fork);
}

/* Locks the table. */
static void zi_lock(void)
{
    pthread_once(&zi_fork_once, zi_register_fork);
    pthread_mutex_lock(&zi_table_lock);
}

/* Unlocks it. */
static void zi_unlock(void)
{
    pthread_mutex_unlock(&zi_table_lock);
}

/* The bucket of a stream's address. */
static size_t zi_bucket(const z_stream *strm)
{
    uint64_t h = (uint64_t)(uintptr_t)strm;
    h ^= h >> 29;
    h *= 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 40) & (ZI_BUCKETS - 1);
}

/* Frees a record and the output it holds. */
static void zi_stream_free(zi_stream *s)
{
    zi_buffer_free(s->rest);
    free(s);
}

/* Puts s in the table in place of any record of the same stream (under the lock). */
static void zi_insert(zi_stream *s)
{
    size_t b = zi_bucket(s->strm);
    zi_stream **at = &zi_buckets[b];
    zi_lock();
    while (*at != NULL && (*at)->strm != s->strm)
        at = &(*at)->next;
    if (*at != NULL) {
        zi_stream *stale = *at;
        s->next = stale->next;
        *at = s;
        zi_unlock();
        zi_stream_free(stale);
        return;
    }
    s->next = zi_buckets[b];
    zi_buckets[b] = s;
    zi_unlock();
}

/* Records a freshly initialised stream. */
zi_stream *zi_stream_add(z_streamp strm, zi_kind kind, int level, int window_bits, int mem_level,
                         int strategy)
{
    zi_stream *s = calloc(1, sizeof *s);
    if (s == NULL) {
        zi_stream_remove(strm);
        return NULL;
    }
    s->strm = strm;
    s->state = strm->state;
    s->kind = kind;
    s->level = level == Z_DEFAULT_COMPRESSION ? 6 : level;
    s->window_bits = window_bits;
    s->mem_level = mem_level;
    s->strategy = strategy;
    s->phase = ZI_FRESH;
    zi_insert(s);
    return s;
}

/* The record of strm as a stream of `kind`, or NULL. */
zi_stream *zi_stream_find(const z_stream *strm, zi_kind kind)
{
    zi_stream *s;
    if (strm == NULL)
        return NULL;
    zi_lock();
    s = zi_buckets[zi_bucket(strm)];
    while (s != NULL && s->strm != strm)
        s = s->next;
    zi_unlock();
    if (s == NULL || s->kind != kind || (const void *)strm->state != s->state)
        return NULL;
    return s;
}

/* Forgets strm. */
void zi_stream_remove(const z_stream *strm)
{
    zi_stream **at;
    zi_stream *gone = NULL;
    if (strm == NULL)
        return;
    zi_lock();
    at = &zi_buckets[zi_bucket(strm)];
    while (*at != NULL && (*at)->strm != strm)
        at = &(*at)->next;
    if (*at != NULL) {
        gone = *at;
        *at = gone->next;
    }
    zi_unlock();
    if (gone != NULL)
        zi_stream_free(gone);
}

/* Back to fresh: drops any pending output, keeps the parameters. */
void zi_stream_restart(zi_stream *s)
{
    zi_buffer_free(s->rest);
    s->rest = NULL;
    s->rest_len = s->rest_pos = 0;
    s->in_len = s->in_given = s->out_len = s->out_given = 0;
    s->check = 0;
    s->has_check = 0;
    s->customised = 0;
    s->phase = ZI_FRESH;
}

/* Records dest as a copy of src, pending output included. */
int zi_stream_copy(z_streamp dest, const zi_stream *src)
{
    zi_stream *s = malloc(sizeof *s);
    if (s == NULL)
        return -1;
    *s = *src;
    s->strm = dest;
    s->state = dest->state;
    s->next = NULL;
    s->rest = NULL;
    if (src->rest != NULL) {
        s->rest = zi_buffer_alloc(src->rest_len);
        if (s->rest == NULL) {
            free(s);
            return -1;
        }
        memcpy(s->rest, src->rest, src->rest_len);
    }
    zi_insert(s);
    return 0;
}

/* Reports input consumed in proportion to the output handed out: all of
 * it once the output is all out, never all of it before. Input the
 * program took away since is not reported twice. */
static void zi_report_input(z_streamp strm, zi_stream *s)
{
    uint64_t want, step;
    if (s->out_given >= s->out_len) {
        want = s->in_len;
    } else {
        want = (uint64_t)((double)s->in_len * ((double)s->out_given / (double)s->out_len));
        if (want >= s->in_len)
            want = s->in_len > 0 ? s->in_len - 1 : 0;
    }
    if (want <= s->in_given)
        return;
    step = want - s->in_given;
    if (step > strm->avail_in)
        step = strm->avail_in;
    strm->next_in += step;
    strm->avail_in -= (uInt)step;
    strm->total_in += (uLong)step;
    s->in_given += step;
}

/* Marks the stream at its end: all output out, the check value set. */
static void zi_stream_end(z_streamp strm, zi_stream *s)
{
    zi_buffer_free(s->rest);
    s->rest = NULL;
    s->rest_len = s->rest_pos = 0;
    s->phase = ZI_ENDED;
    if (s->has_check)
        strm->adler = s->check;
    if (s->kind == ZI_INFLATER)
        strm->data_type = 64; /* zlib's value after the last block: no bits left over */
}

/* Takes an offloaded call's output over (see the header). */
void zi_stream_take_over(z_streamp strm, zi_stream *s, size_t in_len, size_t first,
                         unsigned char *rest, size_t rest_len, uLong check, int has_check)
{
    zi_buffer_free(s->rest);
    s->rest = rest;
    s->rest_len = rest_len;
    s->rest_pos = 0;
    s->in_len = in_len;
    s->in_given = 0;
    s->out_len = (uint64_t)first + rest_len;
    s->out_given = first;
    s->check = check;
    s->has_check = has_check;
    s->phase = ZI_HANDING_OUT;
    strm->next_out += first;
    strm->avail_out -= (uInt)first;
    strm->total_out += (uLong)first;
    zi_stream_hand_out(strm, s);
}

/* Hands out what fits of the pending output (see the header). */
size_t zi_stream_hand_out(z_streamp strm, zi_stream *s)
{
    size_t left = s->rest_len - s->rest_pos;
    size_t n = left < strm->avail_out ? left : strm->avail_out;
    if (n > 0) {
        memcpy(strm->next_out, s->rest + s->rest_pos, n);
        strm->next_out += n;
        strm->avail_out -= (uInt)n;
        strm->total_out += (uLong)n;
        s->rest_pos += n;
        s->out_given += n;
    }
    zi_report_input(strm, s);
    if (s->rest_pos == s->rest_len)
        zi_stream_end(strm, s);
    return n;
}

/* Reads byte `at` of the concatenation of the output pieces (0 past the end). */
unsigned char zi_piece_byte(const isola_out_piece *out, size_t n_out, size_t at)
{
    for (size_t i = 0; i < n_out; i++) {
        if (at < out[i].len)
            return ((const unsigned char *)out[i].data)[at];
        at -= out[i].len;
    }
    return 0;
}
