/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * timing.h - the miss-overlap (memory-level parallelism) timing of one
 * out-of-order core, used by the llcsim QEMU plugin (rob=) and by the host
 * unit test.  Times in centicycles.
 *
 * An occupancy model: every L1 miss is outstanding from its issue for the
 * latency of the level that serves it.  It issues at once, unless it follows
 * a pointer an outstanding miss loaded (its virtual address lies in the 64
 * bytes from that value: a pointer chase, a hash chain), then when that one
 * completes.  The core's time stops only when a miss finds `mshr` misses
 * outstanding (until the first completes) or the oldest one `rob`
 * instructions behind (the reorder buffer is full: until it completes).
 */
#ifndef LLCSIM_TIMING_H
#define LLCSIM_TIMING_H

#include <stdint.h>

#define TM_MAX_MSHR 64

struct tm_core {
	uint64_t rob;			/* instruction window; > 0 */
	unsigned int mshr;		/* outstanding misses, 1..TM_MAX_MSHR */
	unsigned int n;			/* outstanding now */
	struct tm_miss {
		uint64_t icount;	/* of the access */
		uint64_t done;		/* centicycles it completes at */
		uint64_t val;		/* the value a load read (0: none) */
	} out[TM_MAX_MSHR];
};

/*
 * A miss at `vaddr` (instruction number `icount`, the core's clock `clock`)
 * that loaded `val` (0 for a store) and is served after `lat` centicycles:
 * joins the outstanding ones; returns the stall it causes (centicycles).
 */
static inline uint64_t tm_stall(struct tm_core *c, uint64_t clock, uint64_t icount,
				uint64_t vaddr, uint64_t val, uint64_t lat)
{
	uint64_t t = clock, issue;
	unsigned int i;

	for (;;) {
		unsigned int oldest = 0, first = 0;

		for (i = 0; i < c->n;)	/* completed by t: gone */
			if (c->out[i].done <= t)
				c->out[i] = c->out[--c->n];
			else
				i++;
		if (c->n == 0)
			break;
		for (i = 1; i < c->n; i++) {
			if (c->out[i].icount < c->out[oldest].icount)
				oldest = i;
			if (c->out[i].done < c->out[first].done)
				first = i;
		}
		if (icount - c->out[oldest].icount >= c->rob)
			t = c->out[oldest].done;	/* reorder buffer full */
		else if (c->n >= c->mshr)
			t = c->out[first].done;		/* no free miss handler */
		else
			break;
	}
	issue = t;
	for (i = 0; i < c->n; i++)		/* follows a pointer in flight */
		if (c->out[i].val && vaddr - c->out[i].val < 64 && c->out[i].done > issue)
			issue = c->out[i].done;
	c->out[c->n].icount = icount;
	c->out[c->n].done = issue + lat;
	c->out[c->n].val = val;
	c->n++;
	return t - clock;
}

#endif /* LLCSIM_TIMING_H */
