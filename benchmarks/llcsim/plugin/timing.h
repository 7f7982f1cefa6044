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
 * completes.  The core's time stops when a miss finds `mshr` misses
 * outstanding (tm_stall: until the first completes), and when its
 * instructions pass `rob` beyond an outstanding miss (tm_retire: the
 * reorder buffer is full behind it, until it completes), so a miss hides at
 * most rob x CPI cycles of its latency however many miss-free instructions
 * follow it.  The caller runs tm_retire wherever it counts instructions,
 * before a miss of those instructions comes to tm_stall.
 */
#ifndef LLCSIM_TIMING_H
#define LLCSIM_TIMING_H

#include <stdint.h>

#define TM_MAX_MSHR 64

struct tm_core {
	uint64_t rob;			/* instruction window; > 0 */
	unsigned int mshr;		/* outstanding misses, 1..TM_MAX_MSHR */
	unsigned int n;			/* outstanding now, oldest first */
	struct tm_miss {
		uint64_t icount;	/* of the access */
		uint64_t done;		/* centicycles it completes at */
		uint64_t val;		/* the value a load read (0: none) */
	} out[TM_MAX_MSHR];
};

/* Drop the misses completed by `t`, keeping the rest in issue order. */
static inline void tm_drop_done(struct tm_core *c, uint64_t t)
{
	unsigned int i, j;

	for (i = j = 0; i < c->n; i++)
		if (c->out[i].done > t)
			c->out[j++] = c->out[i];
	c->n = j;
}

/*
 * `n` instructions past number `icount`, the core's clock at `clock` before
 * them, `c_cpi` centicycles each: every outstanding miss whose window fills
 * among them (at its icount + rob) holds the core from there until it
 * completes, oldest first, each after the stalls before it.  Returns the
 * stall to add to the clock beside the n x c_cpi (centicycles).
 */
static inline uint64_t tm_retire(struct tm_core *c, uint64_t clock, uint64_t icount, uint64_t n,
				 uint64_t c_cpi)
{
	uint64_t stall = 0;
	unsigned int i, k;

	for (k = 0; k < c->n && c->out[k].icount + c->rob <= icount + n; k++) {
		uint64_t at = c->out[k].icount + c->rob;
		uint64_t full = clock + (at > icount ? at - icount : 0) * c_cpi + stall;

		if (c->out[k].done > full)
			stall += c->out[k].done - full;
	}
	for (i = k; i < c->n; i++)
		c->out[i - k] = c->out[i];
	c->n -= k;
	return stall;
}

/*
 * A miss at `vaddr` (instruction number `icount`, the core's clock `clock`,
 * tm_retire run up to icount) that loaded `val` (0 for a store) and is
 * served after `lat` centicycles: joins the outstanding ones; returns the
 * stall it causes (centicycles): none unless `mshr` are outstanding.
 */
static inline uint64_t tm_stall(struct tm_core *c, uint64_t clock, uint64_t icount,
				uint64_t vaddr, uint64_t val, uint64_t lat)
{
	uint64_t t = clock, issue;
	unsigned int i;

	for (tm_drop_done(c, t); c->n >= c->mshr; tm_drop_done(c, t)) {
		unsigned int first = 0;		/* no free miss handler */

		for (i = 1; i < c->n; i++)
			if (c->out[i].done < c->out[first].done)
				first = i;
		t = c->out[first].done;
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
