/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * prefetch.h - a per-core stride prefetcher for the llcsim QEMU plugin
 * (pf=) and the host unit test.
 *
 * Trained on L1 misses (the accesses an L2 prefetcher sees, hits on lines
 * it prefetched included) by their virtual line, as the L1 stride and L2
 * stream prefetchers of recent x86 cores follow a stream: a table of
 * `streams` entries (LRU), each the last line of a stream and its stride.
 * A miss within PF_WINDOW lines of an entry's last line trains that entry
 * (a new stride: confidence 1; the same stride again: one more); a miss
 * near none takes the least recently used entry.  From PF_TRAIN equal
 * strides in a row on, every miss of the stream asks for the lines up to
 * `dist` strides ahead of it that were not asked for yet.
 *
 * Targets are physical lines.  A target in the 4 KiB page of the miss has
 * the miss's frame; one in another page needs that page's frame, which the
 * prefetcher knows only if the core touched the page lately: a
 * direct-mapped table of 2^xbits virtual pages -> frames, refreshed by every
 * access the caller shows it (pf_seen; the plugin shows user-mode ones: the
 * translations a TLB and a page walk would give the prefetcher).  xbits = 0: no table, prefetches stop at the page's end (a
 * prefetcher of physical addresses); the stream then misses once per page.
 * Where the lines go and what they cost is the caller's business.
 */
#ifndef LLCSIM_PREFETCH_H
#define LLCSIM_PREFETCH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PF_MAX_STREAMS	64
#define PF_MAX_DIST	64
#define PF_WINDOW	16	/* lines */
#define PF_TRAIN	2	/* equal strides in a row */
#define PF_PAGE_LINES	64	/* 4 KiB of 64 B lines */

struct pf_stream {
	uint64_t last;		/* virtual line of its last miss */
	int64_t stride;		/* lines; 0 = not trained */
	uint64_t ahead;		/* furthest line asked for, on last + k * stride */
	uint64_t used;		/* LRU stamp; 0 = free */
	uint32_t conf;
};

struct pf_xlat {
	uint64_t vpage;		/* virtual page + 1; 0 = empty */
	uint64_t frame;
};

struct pf {
	unsigned int dist, nstreams, xbits;
	uint64_t tick, last_vpage;
	uint64_t issued;	/* lines asked for */
	struct pf_stream s[PF_MAX_STREAMS];
	struct pf_xlat *xlat;
};

/* 0, or -1 for a bad configuration or no memory. */
static inline int pf_init(struct pf *p, unsigned int dist, unsigned int nstreams, unsigned int xbits)
{
	memset(p, 0, sizeof(*p));
	if (dist > PF_MAX_DIST || !nstreams || nstreams > PF_MAX_STREAMS || xbits > 24)
		return -1;
	p->dist = dist;
	p->nstreams = nstreams;
	p->xbits = xbits;
	p->last_vpage = UINT64_MAX;
	if (xbits && !(p->xlat = calloc((size_t)1 << xbits, sizeof(*p->xlat))))
		return -1;
	return 0;
}

static inline void pf_free(struct pf *p)
{
	free(p->xlat);
	p->xlat = NULL;
}

/* Forget the streams (the translations stay: they are the page tables'). */
static inline void pf_reset(struct pf *p)
{
	memset(p->s, 0, sizeof(p->s));
}

/* An access of the core: vaddr is at pa (keeps the page's frame). */
static inline void pf_seen(struct pf *p, uint64_t vaddr, uint64_t pa)
{
	uint64_t vp = vaddr >> 12;

	if (!p->xbits || vp == p->last_vpage)
		return;
	p->last_vpage = vp;
	p->xlat[vp & ((1ULL << p->xbits) - 1)] = (struct pf_xlat){ vp + 1, pa >> 12 };
}

/* Physical line of virtual line vl, given that virtual line ml is at
 * physical line pl; 0 when unknown (frame 0 is never a stream's). */
static inline uint64_t pf_translate(const struct pf *p, uint64_t vl, uint64_t ml, uint64_t pl)
{
	uint64_t vp = vl / PF_PAGE_LINES;
	const struct pf_xlat *x;

	if (vp == ml / PF_PAGE_LINES)
		return pl + (vl - ml);
	if (!p->xbits)
		return 0;
	x = &p->xlat[vp & ((1ULL << p->xbits) - 1)];
	if (x->vpage != vp + 1)
		return 0;
	return x->frame * PF_PAGE_LINES + vl % PF_PAGE_LINES;
}

/*
 * An L1 miss at vaddr (physical pa): trains the table; writes the physical
 * addresses of the lines to prefetch to out[] (room for dist) and returns
 * how many.
 */
static inline unsigned int pf_miss(struct pf *p, uint64_t vaddr, uint64_t pa, uint64_t *out)
{
	uint64_t vl = vaddr >> 6, pl = pa >> 6;
	struct pf_stream *e = NULL, *near = NULL, *victim = &p->s[0];
	unsigned int i, n = 0;
	int64_t k;

	if (!p->dist)
		return 0;
	for (i = 0; i < p->nstreams; i++) {
		struct pf_stream *s = &p->s[i];
		int64_t d = (int64_t)(vl - s->last);

		if (s->used < victim->used)
			victim = s;
		if (!s->used)
			continue;
		if (d == 0) {		/* the same line again */
			s->used = ++p->tick;
			return 0;
		}
		if (s->stride && d == s->stride) {
			e = s;
			break;
		}
		if (!near && d >= -PF_WINDOW && d <= PF_WINDOW)
			near = s;
	}
	if (e) {
		if (e->conf < 255)
			e->conf++;
	} else if (near) {		/* a new stride */
		e = near;
		e->stride = (int64_t)(vl - e->last);
		e->conf = 1;
		e->ahead = vl;
	} else {			/* a new stream */
		e = victim;
		e->stride = 0;
		e->conf = 0;
		e->ahead = vl;
	}
	e->last = vl;
	e->used = ++p->tick;
	if (e->conf < PF_TRAIN)
		return 0;
	k = (int64_t)(e->ahead - vl) / e->stride;
	if (k < 0)
		k = 0;
	while (k < (int64_t)p->dist) {
		uint64_t t = vl + (uint64_t)((k + 1) * e->stride);
		uint64_t tp = pf_translate(p, t, vl, pl);

		if (!tp)
			break;		/* a page whose frame it does not know */
		out[n++] = tp << 6;
		e->ahead = t;
		k++;
	}
	p->issued += n;
	return n;
}

#endif /* LLCSIM_PREFETCH_H */
