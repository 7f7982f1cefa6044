/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cachemodel.h - one set-associative cache level, used by the llcsim QEMU
 * plugin (private L1d/L2 per vCPU, one shared LLC) and by the host unit test.
 *
 * Model:
 *   - set index = (addr >> line_shift) & (sets - 1): physically indexed when
 *     fed physical addresses; no slice hashing.
 *   - a lookup that misses allocates the line (write-allocate; loads and
 *     stores are treated alike, dirty state and write-backs are not modelled).
 *   - replacement: true LRU (each set kept in MRU..LRU order) or random
 *     (xorshift64, an invalid way first).
 *   - no locking here: the caller serialises accesses to one set (the plugin
 *     uses striped spinlocks for the shared LLC; private levels are only
 *     touched by their own vCPU thread).
 */
#ifndef LLCSIM_CACHEMODEL_H
#define LLCSIM_CACHEMODEL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum cm_repl { CM_LRU = 0, CM_RANDOM = 1 };

struct cm_cache {
	uint64_t size;		/* bytes */
	uint32_t ways;
	uint32_t line;		/* bytes, power of two */
	uint32_t sets;		/* power of two */
	uint32_t line_shift;
	uint32_t set_mask;
	enum cm_repl repl;
	/* sets * ways entries; entry = line number + 1, 0 = invalid;
	 * for LRU, slot 0 of a set is the MRU line, slot ways-1 the LRU line. */
	uint64_t *tags;
};

static inline int cm_is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

/* Returns 0, or -1 when the geometry is not usable (sizes not powers of two,
 * size not a multiple of ways*line, allocation failure). */
static inline int cm_init(struct cm_cache *c, uint64_t size, uint32_t ways,
			  uint32_t line, enum cm_repl repl)
{
	memset(c, 0, sizeof(*c));
	if (!ways || !cm_is_pow2(line) || size % ((uint64_t)ways * line))
		return -1;
	uint64_t sets = size / ((uint64_t)ways * line);
	if (!cm_is_pow2(sets) || sets > (1u << 30))
		return -1;
	c->size = size;
	c->ways = ways;
	c->line = line;
	c->sets = (uint32_t)sets;
	c->line_shift = (uint32_t)__builtin_ctzll(line);
	c->set_mask = (uint32_t)sets - 1;
	c->repl = repl;
	c->tags = calloc(sets * ways, sizeof(uint64_t));
	return c->tags ? 0 : -1;
}

static inline void cm_free(struct cm_cache *c)
{
	free(c->tags);
	c->tags = NULL;
}

static inline void cm_flush(struct cm_cache *c)
{
	memset(c->tags, 0, (size_t)c->sets * c->ways * sizeof(uint64_t));
}

static inline uint32_t cm_set_of(const struct cm_cache *c, uint64_t addr)
{
	return (uint32_t)(addr >> c->line_shift) & c->set_mask;
}

static inline uint64_t cm_xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/*
 * Access addr.  Returns 1 on a hit, 0 on a miss (the line is then filled).
 * rng: state for random replacement (per caller, non-zero), may be NULL for LRU.
 */
static inline int cm_access(struct cm_cache *c, uint64_t addr, uint64_t *rng)
{
	uint64_t tag = (addr >> c->line_shift) + 1;
	uint64_t *set = c->tags + (size_t)cm_set_of(c, addr) * c->ways;
	uint32_t w, n = c->ways;

	if (c->repl == CM_LRU) {
		for (w = 0; w < n; w++) {
			if (set[w] == tag) {
				if (w)	/* move to MRU */
					memmove(set + 1, set, w * sizeof(uint64_t));
				set[0] = tag;
				return 1;
			}
		}
		/* miss: drop the LRU line (slot n-1), insert at MRU */
		memmove(set + 1, set, (n - 1) * sizeof(uint64_t));
		set[0] = tag;
		return 0;
	}
	for (w = 0; w < n; w++)
		if (set[w] == tag)
			return 1;
	for (w = 0; w < n; w++) {
		if (!set[w]) {
			set[w] = tag;
			return 0;
		}
	}
	set[cm_xorshift(rng) % n] = tag;
	return 0;
}

/* Is the line of addr present (no state change)? */
static inline int cm_probe(const struct cm_cache *c, uint64_t addr)
{
	uint64_t tag = (addr >> c->line_shift) + 1;
	const uint64_t *set = c->tags + (size_t)cm_set_of(c, addr) * c->ways;
	for (uint32_t w = 0; w < c->ways; w++)
		if (set[w] == tag)
			return 1;
	return 0;
}

/* Parse "2M", "256K", "64" (bytes); returns 0 on a bad string. */
static inline uint64_t cm_parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B' || *end == 'b')
		end++;
	if (*end == 'B')
		end++;
	return *end ? 0 : v;
}

#endif /* LLCSIM_CACHEMODEL_H */
