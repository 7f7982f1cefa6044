/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bandwidth.h - memory-bandwidth contention for the llcsim timing, used by
 * the QEMU plugin (bw_peak=) and by the host unit test.  Times in
 * centicycles of modeled time.
 *
 * Every line that crosses the memory interface - an LLC miss of a demand
 * access, a prefetch fill that missed the LLC - is counted, by whichever
 * vCPU caused it, in a window of modeled time shared by all vCPUs: BW_SLOTS
 * slots of `slot` centicycles, a slot keyed by the slot number it counts
 * (slot number = clock / slot), reused when its number has passed.  The
 * vCPUs run within the sync= quantum of each other in modeled time, so
 * their traffic meets in the same slots.  A miss to memory at clock t then
 * costs
 *
 *     lat_mem / (1 - min(u, umax)),   u = lines in the window / (window x peak)
 *
 * (the window: the BW_SLOTS slots ending at t's, and any a vCPU ahead in
 * modeled time already filled), an M/M/1-like queueing delay: no traffic,
 * the unloaded latency; traffic near the peak, the latency grows until umax
 * caps it.  Written-back dirty lines are not counted (the cache model keeps
 * no dirty bits): the fitted peak is in lines filled, for the native stream
 * that writes every line it reads (scripts/calibrate.py bandwidth).
 *
 * Two vCPUs may update a slot at once: the counts are atomic, a slot's reuse
 * is a compare-and-swap of its key (the loser's line goes into the new
 * slot), so a line may at worst be lost at a slot boundary.
 */
#ifndef LLCSIM_BANDWIDTH_H
#define LLCSIM_BANDWIDTH_H

#include <stdint.h>

#define BW_SLOTS 16

struct bw_model {
	double peak;			/* lines per centicycle; 0 = off */
	double umax;			/* cap of u, < 1 */
	uint64_t slot;			/* centicycles per slot, > 0 */
	uint64_t key[BW_SLOTS];		/* slot number + 1 it counts (0: none) */
	uint64_t lines[BW_SLOTS];
};

/* peak_per_kcycle: lines per 1000 cycles (0 = off); slot_cycles: cycles
 * per slot (the window is BW_SLOTS of them). */
static inline void bw_init(struct bw_model *m, double peak_per_kcycle, double umax, uint64_t slot_cycles)
{
	unsigned int i;

	m->peak = peak_per_kcycle / 1000.0 / 100.0;
	m->umax = umax < 0 ? 0 : umax > 0.99 ? 0.99 : umax;
	m->slot = slot_cycles ? slot_cycles * 100 : 100;
	for (i = 0; i < BW_SLOTS; i++)
		m->key[i] = m->lines[i] = 0;
}

/* A line crossed the memory interface at `clock` (centicycles). */
static inline void bw_add(struct bw_model *m, uint64_t clock)
{
	uint64_t n = clock / m->slot + 1, i = n % BW_SLOTS;
	uint64_t k = __atomic_load_n(&m->key[i], __ATOMIC_RELAXED);

	if (k < n && __atomic_compare_exchange_n(&m->key[i], &k, n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		__atomic_store_n(&m->lines[i], 0, __ATOMIC_RELAXED);
	else if (k > n)
		return;		/* a slot a vCPU far ahead took over: too late */
	__atomic_fetch_add(&m->lines[i], 1, __ATOMIC_RELAXED);
}

/* u at `clock`: the lines of the window over what the peak moves in it. */
static inline double bw_util(const struct bw_model *m, uint64_t clock)
{
	uint64_t n = clock / m->slot + 1, sum = 0;
	unsigned int i;

	for (i = 0; i < BW_SLOTS; i++) {
		uint64_t k = __atomic_load_n(&m->key[i], __ATOMIC_RELAXED);

		if (k + BW_SLOTS > n)	/* within the window, or ahead of it */
			sum += __atomic_load_n(&m->lines[i], __ATOMIC_RELAXED);
	}
	return sum / ((double)BW_SLOTS * m->slot * m->peak);
}

/* The latency (centicycles) of a miss to memory of unloaded latency lat. */
static inline uint64_t bw_latency(const struct bw_model *m, uint64_t clock, uint64_t lat)
{
	double u;

	if (m->peak <= 0)
		return lat;
	u = bw_util(m, clock);
	if (u > m->umax)
		u = m->umax;
	return (uint64_t)(lat / (1 - u) + 0.5);
}

#endif /* LLCSIM_BANDWIDTH_H */
