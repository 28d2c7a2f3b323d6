/* The optional compiled host sweep of traceview/analyses/host.py: the loop sweep
 * (attribute_host(general=True), the reference) as one pass in C.
 *
 * Why: a numpy array sweep that stood in for the Python loop took ~50 array passes over
 * the rows (1.1-1.3 CPU s and its row-sized temporaries on a real 450 MB torch.compile
 * trace, the largest stage once decoding was compiled: CHANGELOG.md, issue #15; it was
 * deleted in issue #23). The loop itself is O(rows) with a stack; in C it takes
 * milliseconds (0.19 s on that trace, docs/performance.md). Same algorithm, line for line,
 * as the Python loop in host.py, so its answers are the reference's by construction; the
 * tests compare the two (tests/test_sweep.py).
 *
 * Inputs, in sweep order (start, then longest first): starts, ends (clipped to the window),
 * own (category code, -1 inherit), subtree (0/1). Outputs: bounds (segments + 1 times; the
 * segments are contiguous from w0 to w1), seg_cat, seg_pos (row position, -1 untraced),
 * resolved (per row), *non_nested. Scratch: four stack arrays of n entries. Returns the
 * number of segments, or -2 if more than seg_cap (cannot happen with 2n + 1).
 *
 * Built by setup.py (setuptools Extension); loaded with ctypes by traceview/native.py.
 */
#include <stdint.h>

int64_t tv_host_sweep(int64_t n, const int64_t *starts, const int64_t *ends, const int32_t *own,
                      const uint8_t *subtree, int64_t w0, int64_t w1, int32_t untraced,
                      int32_t other, int64_t *bounds, int32_t *seg_cat, int32_t *seg_pos,
                      int64_t seg_cap, int32_t *resolved, int64_t *non_nested,
                      int64_t *st_end, int32_t *st_pos, int32_t *st_res, int32_t *st_forced) {
    int64_t top = 0; /* stack size */
    int64_t segs = 0;
    int64_t t = w0;
    int64_t nn = 0;
#define EMIT(s, e, c, o)                          \
    do {                                          \
        if (segs >= seg_cap) return -2;           \
        bounds[segs] = (s);                       \
        bounds[segs + 1] = (e);                   \
        seg_cat[segs] = (c);                      \
        seg_pos[segs] = (o);                      \
        segs++;                                   \
    } while (0)
    for (int64_t pos = 0; pos < n; pos++) {
        int64_t st = starts[pos], en = ends[pos];
        /* the time up to this start belongs to the open slice that started last */
        while (t < st) {
            while (top > 0 && st_end[top - 1] <= t) top--;
            if (top == 0) {
                EMIT(t, st, untraced, -1);
                t = st;
                break;
            }
            int64_t end = st < st_end[top - 1] ? st : st_end[top - 1];
            EMIT(t, end, st_res[top - 1], st_pos[top - 1]);
            t = end;
        }
        while (top > 0 && st_end[top - 1] <= st) top--;
        int32_t forced, res, oc = own[pos];
        int has_parent = top > 0;
        if (has_parent) {
            forced = st_forced[top - 1];
            if (en > st_end[top - 1]) nn++;
        } else {
            forced = -1;
        }
        if (subtree[pos]) {
            forced = res = oc;
        } else if (forced != -1) {
            res = forced;
        } else if (oc == -1) {
            res = has_parent ? st_res[top - 1] : other;
        } else {
            res = oc;
        }
        resolved[pos] = res;
        st_end[top] = en;
        st_pos[top] = (int32_t)pos;
        st_res[top] = res;
        st_forced[top] = forced;
        top++;
    }
    while (t < w1) { /* the tail of the window */
        while (top > 0 && st_end[top - 1] <= t) top--;
        if (top == 0) {
            EMIT(t, w1, untraced, -1);
            break;
        }
        int64_t end = w1 < st_end[top - 1] ? w1 : st_end[top - 1];
        EMIT(t, end, st_res[top - 1], st_pos[top - 1]);
        t = end;
    }
    *non_nested = nn;
    return segs;
#undef EMIT
}

/* The compiled twin of traceview/model.py's clip_to_callers: Python frames
 * in start order (longest first), each clipped to the end of the innermost open frame
 * (whose end is already clipped). Same loop as the Python reference, line for line
 * (tests/test_training_invariants.py compares both). ends is rewritten in place; stack is
 * scratch of n entries. Returns the number of frames clipped. */
int64_t tv_clip_frames(int64_t n, const int64_t *starts, int64_t *ends, int64_t *stack) {
    int64_t top = 0, clipped = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t a = starts[i];
        while (top > 0 && stack[top - 1] <= a) top--;
        if (top > 0 && ends[i] > stack[top - 1]) {
            ends[i] = stack[top - 1];
            clipped++;
        }
        stack[top++] = ends[i];
    }
    return clipped;
}

/* What native.py checks before it calls tv_host_sweep: the ABI version (bump it with any
 * change of tv_host_sweep's arguments or meaning, together with native.py's table) and the
 * sha256 of the source this library was built from (setup.py defines it), compared with
 * the .c file beside the library, so a library left from an older source is refused. */
#ifndef TV_SOURCE_SHA256
#define TV_SOURCE_SHA256 "unknown"
#endif
int64_t tv_abi_version(void) { return 1; }
const char *tv_source_sha256(void) { return TV_SOURCE_SHA256; }
