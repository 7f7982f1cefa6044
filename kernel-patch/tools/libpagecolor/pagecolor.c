// SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
/*
 * libpagecolor - see pagecolor.h.
 */
#define _GNU_SOURCE
#include "pagecolor.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---------------------------------------------------------------- sets */

#define BPL PAGECOLOR_BITS_PER_LONG

void pagecolor_set_zero(pagecolor_set_t *set)
{
	memset(set, 0, sizeof(*set));
}

void pagecolor_set_fill(pagecolor_set_t *set, int n)
{
	int i;

	pagecolor_set_zero(set);
	if (n > PAGE_COLOR_MAX_COLORS)
		n = PAGE_COLOR_MAX_COLORS;
	for (i = 0; i < n; i++)
		set->bits[i / BPL] |= 1UL << (i % BPL);
}

static int color_ok(int color)
{
	if (color < 0 || color >= PAGE_COLOR_MAX_COLORS) {
		errno = EINVAL;
		return 0;
	}
	return 1;
}

int pagecolor_set_add(pagecolor_set_t *set, int color)
{
	if (!color_ok(color))
		return -1;
	set->bits[color / BPL] |= 1UL << (color % BPL);
	return 0;
}

int pagecolor_set_del(pagecolor_set_t *set, int color)
{
	if (!color_ok(color))
		return -1;
	set->bits[color / BPL] &= ~(1UL << (color % BPL));
	return 0;
}

int pagecolor_set_test(const pagecolor_set_t *set, int color)
{
	if (!color_ok(color))
		return -1;
	return !!(set->bits[color / BPL] & (1UL << (color % BPL)));
}

int pagecolor_set_count(const pagecolor_set_t *set)
{
	size_t i;
	int n = 0;

	for (i = 0; i < PAGECOLOR_SET_LONGS; i++)
		n += __builtin_popcountl(set->bits[i]);
	return n;
}

int pagecolor_set_equal(const pagecolor_set_t *a, const pagecolor_set_t *b)
{
	return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

int pagecolor_set_width(const pagecolor_set_t *set)
{
	int i;

	for (i = PAGE_COLOR_MAX_COLORS - 1; i >= 0; i--)
		if (set->bits[i / BPL] & (1UL << (i % BPL)))
			return i + 1;
	return 0;
}

static const char *skip_ws(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

static int parse_num(const char **pp, long *out)
{
	const char *p = *pp;
	char *end;
	long v;

	if (!isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || end == p)
		return -1;
	*out = v;
	*pp = end;
	return 0;
}

int pagecolor_set_parse(pagecolor_set_t *set, const char *str, int limit)
{
	pagecolor_set_t tmp;
	const char *p;
	long a, b, i;
	int range_err = 0;

	if (!set || !str) {
		errno = EINVAL;
		return -1;
	}
	if (limit <= 0 || limit > PAGE_COLOR_MAX_COLORS)
		limit = PAGE_COLOR_MAX_COLORS;
	pagecolor_set_zero(&tmp);
	p = skip_ws(str);
	if (strncmp(p, "all", 3) == 0 && *skip_ws(p + 3) == '\0') {
		pagecolor_set_fill(set, limit);
		return 0;
	}
	if (*p == '\0') {
		*set = tmp;
		return 0;
	}
	for (;;) {
		p = skip_ws(p);
		if (parse_num(&p, &a))
			goto inval;
		b = a;
		p = skip_ws(p);
		if (*p == '-') {
			p = skip_ws(p + 1);
			if (parse_num(&p, &b))
				goto inval;
			if (b < a)
				goto inval;
			p = skip_ws(p);
		}
		if (a >= limit || b >= limit) {
			range_err = 1;
		} else {
			for (i = a; i <= b; i++)
				tmp.bits[i / BPL] |= 1UL << (i % BPL);
		}
		if (*p == '\0')
			break;
		if (*p != ',')
			goto inval;
		p++;
	}
	if (range_err) {
		errno = ERANGE;
		return -1;
	}
	*set = tmp;
	return 0;
inval:
	errno = EINVAL;
	return -1;
}

int pagecolor_set_format(const pagecolor_set_t *set, char *buf, size_t len)
{
	size_t pos = 0;
	int i = 0, first = 1;
	char item[32];

	if (buf && len)
		buf[0] = '\0';
	while (i < PAGE_COLOR_MAX_COLORS) {
		int j, n;

		if (!(set->bits[i / BPL] & (1UL << (i % BPL)))) {
			i++;
			continue;
		}
		j = i;
		while (j + 1 < PAGE_COLOR_MAX_COLORS &&
		       (set->bits[(j + 1) / BPL] & (1UL << ((j + 1) % BPL))))
			j++;
		if (j == i)
			n = snprintf(item, sizeof(item), "%s%d", first ? "" : ",", i);
		else
			n = snprintf(item, sizeof(item), "%s%d-%d",
				     first ? "" : ",", i, j);
		first = 0;
		if (buf && pos + (size_t)n < len)
			memcpy(buf + pos, item, (size_t)n + 1);
		else if (buf && len && pos < len)
			buf[pos] = '\0';
		pos += (size_t)n;
		i = j + 1;
	}
	return (int)pos;
}

/* ---------------------------------------------------------- sysfs helpers */

static int read_file(const char *path, char *buf, size_t len)
{
	int fd, saved;
	ssize_t n;
	size_t got = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (got + 1 < len) {
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			saved = errno;
			close(fd);
			errno = saved;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	return (int)got;
}

static int read_ull(const char *path, unsigned long long *val)
{
	char buf[64], *end;
	unsigned long long v;

	if (read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	errno = 0;
	v = strtoull(buf, &end, 0);
	if (errno || end == buf) {
		errno = EINVAL;
		return -1;
	}
	*val = v;
	return 0;
}

int pagecolor_read_counter(const char *name, unsigned long long *value)
{
	char path[256];

	if (!name || !value || strchr(name, '/')) {
		errno = EINVAL;
		return -1;
	}
	snprintf(path, sizeof(path), PAGECOLOR_SYSFS_DIR "/%s", name);
	return read_ull(path, value);
}

/* ------------------------------------------------------------ syscalls */

long pagecolor_sys_set_color_policy_flags(int mode, const unsigned long *mask,
					  unsigned long maxcolor, unsigned int flags)
{
#ifdef __NR_set_color_policy
	return syscall(__NR_set_color_policy, mode, mask, maxcolor, flags);
#else
	(void)mode; (void)mask; (void)maxcolor; (void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

long pagecolor_sys_set_color_policy(int mode, const unsigned long *mask,
				    unsigned long maxcolor)
{
	return pagecolor_sys_set_color_policy_flags(mode, mask, maxcolor, 0);
}

long pagecolor_sys_color_mbind(unsigned long start, unsigned long len,
			       int mode, const unsigned long *mask,
			       unsigned long maxcolor, unsigned int flags)
{
#ifdef __NR_color_mbind
	return syscall(__NR_color_mbind, start, len, mode, mask, maxcolor,
		       flags);
#else
	(void)start; (void)len; (void)mode; (void)mask; (void)maxcolor;
	(void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

long pagecolor_sys_get_color_policy(int *mode, unsigned long *mask,
				    unsigned long maxcolor, unsigned long addr,
				    unsigned int flags)
{
#ifdef __NR_get_color_policy
	return syscall(__NR_get_color_policy, mode, mask, maxcolor, addr,
		       flags);
#else
	(void)mode; (void)mask; (void)maxcolor; (void)addr; (void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

/* -------------------------------------------------------------- probe */

/*
 * Cached probe: 0 = not probed yet, 1 = supported, otherwise -errno.
 * Every thread computes the same answer, so the race is benign; the atomic
 * builtins keep it free of data races in the C11 sense.
 */
static int probe_state;
static int nr_colors_cache;

static int probe(void)
{
	unsigned long long enabled, nr;
	unsigned long mask[PAGECOLOR_SET_LONGS];
	int mode = -1;

	if (access(PAGECOLOR_SYSFS_DIR, F_OK) != 0)
		return -ENOENT;
	if (read_ull(PAGECOLOR_SYSFS_DIR "/nr_colors", &nr) != 0)
		return -ENOENT;
	if (read_ull(PAGECOLOR_SYSFS_DIR "/enabled", &enabled) == 0 &&
	    enabled == 0)
		return -ENODEV;
	if (nr == 0 || nr > PAGE_COLOR_MAX_COLORS)
		return -ENODEV;
	/* Harmless call: read the task default policy. */
	if (pagecolor_sys_get_color_policy(&mode, mask, PAGE_COLOR_MAX_COLORS,
					   0, 0) != 0) {
		/* ENOSYS: no such calls; EOPNOTSUPP: colouring switched off */
		if (errno == ENOSYS || errno == EOPNOTSUPP)
			return -errno;
		return -(errno ? errno : EIO);
	}
	__atomic_store_n(&nr_colors_cache, (int)nr, __ATOMIC_RELAXED);
	return 1;
}

int pagecolor_supported(void)
{
	int st = __atomic_load_n(&probe_state, __ATOMIC_ACQUIRE);

	if (st == 0) {
		int saved = errno;

		st = probe();
		errno = saved;
		__atomic_store_n(&probe_state, st, __ATOMIC_RELEASE);
	}
	if (st == 1)
		return 1;
	errno = -st;
	return 0;
}

void pagecolor_reset_probe(void)
{
	__atomic_store_n(&probe_state, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&nr_colors_cache, 0, __ATOMIC_RELAXED);
}

/*
 * The errno of a wrapper that refuses because the probe failed: what the
 * kernel answers, EOPNOTSUPP when it has colouring switched off (sysfs
 * enabled 0, or the calls said so), ENOSYS when it has none.
 */
static int unsupported_errno(void)
{
	int st = __atomic_load_n(&probe_state, __ATOMIC_ACQUIRE);

	return st == -ENODEV || st == -EOPNOTSUPP ? EOPNOTSUPP : ENOSYS;
}

int pagecolor_nr_colors(void)
{
	if (!pagecolor_supported())
		return -1;
	return __atomic_load_n(&nr_colors_cache, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ wrappers */

int pagecolor_set_policy(int mode, const pagecolor_set_t *set)
{
	if (!pagecolor_supported()) {
		errno = unsupported_errno();
		return -1;
	}
	if (mode == COLOR_MODE_DEFAULT && !set)
		return (int)pagecolor_sys_set_color_policy(mode, NULL, 0);
	if (!set) {
		errno = EINVAL;
		return -1;
	}
	return (int)pagecolor_sys_set_color_policy(mode, set->bits,
						   PAGE_COLOR_MAX_COLORS);
}

int pagecolor_mbind(void *addr, size_t len, int mode,
		    const pagecolor_set_t *set, unsigned int flags)
{
	if (!pagecolor_supported()) {
		errno = unsupported_errno();
		return -1;
	}
	if (mode == COLOR_MODE_DEFAULT && !set)
		return (int)pagecolor_sys_color_mbind((unsigned long)addr, len,
						      mode, NULL, 0, flags);
	if (!set) {
		errno = EINVAL;
		return -1;
	}
	return (int)pagecolor_sys_color_mbind((unsigned long)addr, len, mode,
					      set->bits, PAGE_COLOR_MAX_COLORS,
					      flags);
}

int pagecolor_get_policy(int *mode, pagecolor_set_t *set, void *addr,
			 unsigned int flags)
{
	pagecolor_set_t tmp;
	int m = 0;

	if (!pagecolor_supported()) {
		errno = unsupported_errno();
		return -1;
	}
	pagecolor_set_zero(&tmp);
	if (pagecolor_sys_get_color_policy(&m, tmp.bits, PAGE_COLOR_MAX_COLORS,
					   (unsigned long)addr, flags) != 0)
		return -1;
	if (mode)
		*mode = m;
	if (set)
		*set = tmp;
	return 0;
}

/* -------------------------------------------------------------- pagemap */

#define PM_PFN_MASK	((1ULL << 55) - 1)
#define PM_SWAP		(1ULL << 62)
#define PM_PRESENT	(1ULL << 63)

int pagecolor_pfns(const void *addr, size_t npages, uint64_t *pfns)
{
	return pagecolor_pid_pfns(0, (uintptr_t)addr, npages, pfns);
}

int pagecolor_pid_pfns(pid_t pid, uintptr_t addr, size_t npages, uint64_t *pfns)
{
	long psz = sysconf(_SC_PAGESIZE);
	uintptr_t start = addr & ~((uintptr_t)psz - 1);
	size_t i, done = 0;
	int fd, saved, any_present = 0, any_pfn = 0;
	char path[64];

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/pagemap");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (done < npages) {
		uint64_t buf[512];
		size_t chunk = npages - done;
		ssize_t n;
		off_t off = (off_t)((start / (uintptr_t)psz + done) * 8);

		if (chunk > 512)
			chunk = 512;
		n = pread(fd, buf, chunk * 8, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			saved = errno;
			close(fd);
			errno = saved;
			return -1;
		}
		if (n == 0) {
			close(fd);
			errno = EIO;
			return -1;
		}
		chunk = (size_t)n / 8;
		for (i = 0; i < chunk; i++) {
			uint64_t e = buf[i];

			if ((e & PM_PRESENT) && !(e & PM_SWAP)) {
				any_present = 1;
				pfns[done + i] = e & PM_PFN_MASK;
				if (pfns[done + i])
					any_pfn = 1;
			} else {
				pfns[done + i] = 0;
			}
		}
		done += chunk;
	}
	close(fd);
	if (any_present && !any_pfn) {
		/* Present pages but PFNs hidden: no CAP_SYS_ADMIN. */
		errno = EPERM;
		return -1;
	}
	return 0;
}

int pagecolor_pfn(const void *addr, uint64_t *pfn)
{
	uint64_t p;

	if (pagecolor_pfns(addr, 1, &p) != 0)
		return -1;
	if (!p) {
		errno = ENOENT;
		return -1;
	}
	*pfn = p;
	return 0;
}

int pagecolor_pfn_color(uint64_t pfn, int nr_colors)
{
	if (nr_colors <= 0) {
		errno = EINVAL;
		return -1;
	}
	return (int)(pfn % (uint64_t)nr_colors);
}

int pagecolor_page_color(const void *addr)
{
	uint64_t pfn;
	int nr = pagecolor_nr_colors();

	if (nr <= 0) {
		errno = unsupported_errno();
		return -1;
	}
	if (pagecolor_pfn(addr, &pfn) != 0)
		return -1;
	return pagecolor_pfn_color(pfn, nr);
}

/* ------------------------------------------------------------ free_pages */

/*
 * free_pages (page_coloring.rst): one line "<colour> <parked pages>" per
 * colour.  Also accepted: "<colour>: <pages>" lines, or lines holding just
 * counts in colour order.  Anything after a '#' is ignored.
 */
int pagecolor_parse_free_pages(char *buf, unsigned long *counts, int nr)
{
	char *line, *save = NULL;
	int n = 0, seq = 0;

	if (!buf || !counts || nr <= 0) {
		errno = EINVAL;
		return -1;
	}
	memset(counts, 0, (size_t)nr * sizeof(*counts));
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long v[2] = { 0, 0 };
		char *hash = strchr(line, '#'), *p = line, *end;
		int k = 0, colon;

		if (hash)
			*hash = '\0';
		colon = strchr(line, ':') != NULL;
		for (;;) {
			unsigned long x;

			while (*p == ':' || isspace((unsigned char)*p))
				p++;
			if (!isdigit((unsigned char)*p))
				break;
			x = strtoul(p, &end, 10);
			if (k < 2)
				v[k] = x;
			k++;
			p = end;
		}
		if (k == 2 || (colon && k >= 2)) {
			if (v[0] < (unsigned long)nr) {
				counts[v[0]] = v[1];
				if ((int)v[0] + 1 > n)
					n = (int)v[0] + 1;
			}
		} else if (k == 1) {
			if (seq < nr)
				counts[seq++] = v[0];
			if (seq > n)
				n = seq;
		}
	}
	if (n == 0) {
		errno = EINVAL;
		return -1;
	}
	return n;
}

int pagecolor_free_pages(unsigned long *counts, int max)
{
	static const size_t bufsz = 64 * 1024;
	char *buf;
	int nr, n, saved;

	nr = pagecolor_nr_colors();
	if (nr < 0)
		return -1;
	if (max < nr)
		nr = max;
	if (!counts || nr <= 0) {
		errno = EINVAL;
		return -1;
	}
	buf = malloc(bufsz);
	if (!buf)
		return -1;
	if (read_file(PAGECOLOR_SYSFS_DIR "/free_pages", buf, bufsz) < 0) {
		saved = errno;
		free(buf);
		errno = saved;
		return -1;
	}
	n = pagecolor_parse_free_pages(buf, counts, nr);
	saved = errno;
	free(buf);
	errno = saved;
	return n;
}

int pagecolor_drain(void)
{
	int fd, saved;

	fd = open(PAGECOLOR_SYSFS_DIR "/drain", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, "1\n", 2) != 2) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	return 0;
}

/* ------------------------------------------------------------- geometry */

int pagecolor_parse_size(const char *text, long long *bytes)
{
	const char *p = text;
	long long v = 0, unit = 1;

	if (!text || !bytes || !isdigit((unsigned char)*p)) {
		errno = EINVAL;
		return -1;
	}
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (LLONG_MAX - (*p - '0')) / 10) {
			errno = ERANGE;
			return -1;
		}
		v = v * 10 + (*p - '0');
	}
	switch (*p) {
	case 'K': case 'k': unit = 1024LL; p++; break;
	case 'M': case 'm': unit = 1024LL * 1024; p++; break;
	case 'G': case 'g': unit = 1024LL * 1024 * 1024; p++; break;
	default: break;
	}
	while (isspace((unsigned char)*p))
		p++;
	if (*p != '\0') {
		errno = EINVAL;
		return -1;
	}
	if (v > LLONG_MAX / unit) {
		errno = ERANGE;
		return -1;
	}
	*bytes = v * unit;
	return 0;
}

/* The text of dir/index<idx>/<name> in buf; 0 or -1. */
static int read_index_file(const char *dir, int idx, const char *name,
			   char *buf, size_t len)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/index%d/%s", dir, idx, name) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return read_file(path, buf, len) < 0 ? -1 : 0;
}

/* dir/index<idx>/<name> as a size (pagecolor_parse_size); 0 or -1. */
static int read_index_size(const char *dir, int idx, const char *name,
			   long long *out)
{
	char buf[64];

	if (read_index_file(dir, idx, name, buf, sizeof(buf)) < 0)
		return -1;
	return pagecolor_parse_size(buf, out);
}

int pagecolor_llc_index(const char *cache_dir, int *index, int *level)
{
	char buf[64];
	int idx, best = -1, best_level = -1;
	long long v;

	for (idx = 0; idx < PAGECOLOR_MAX_CACHE_INDEX; idx++) {
		if (read_index_file(cache_dir, idx, "type", buf, sizeof(buf)) < 0)
			break;
		buf[strcspn(buf, "\n")] = '\0';
		if (strcmp(buf, "Instruction") == 0)
			continue;
		/* a level is a plain positive number ("3K" is none) */
		if (read_index_file(cache_dir, idx, "level", buf, sizeof(buf)) < 0 ||
		    strpbrk(buf, "KkMmGg") || pagecolor_parse_size(buf, &v) < 0 ||
		    v <= 0 || v > INT_MAX)
			continue;
		if (v > best_level) {
			best_level = (int)v;
			best = idx;
		}
	}
	if (best < 0) {
		errno = ENOENT;
		return -1;
	}
	*index = best;
	*level = best_level;
	return 0;
}

int pagecolor_geometry_dir(const char *cache_dir, struct pagecolor_geometry *geo)
{
	int best;
	long long v;

	if (!geo || !cache_dir) {
		errno = EINVAL;
		return -1;
	}
	memset(geo, 0, sizeof(*geo));
	geo->page_size = sysconf(_SC_PAGESIZE);
	if (pagecolor_llc_index(cache_dir, &best, &geo->level) < 0)
		return -1;
	if (read_index_size(cache_dir, best, "size", &v) == 0)
		geo->size = v;
	if (read_index_size(cache_dir, best, "ways_of_associativity", &v) == 0 &&
	    v <= INT_MAX)
		geo->ways = (int)v;
	if (read_index_size(cache_dir, best, "coherency_line_size", &v) == 0 &&
	    v <= INT_MAX)
		geo->line_size = (int)v;
	if (read_index_size(cache_dir, best, "number_of_sets", &v) == 0 &&
	    v <= INT_MAX)
		geo->sets = (int)v;
	if (read_index_file(cache_dir, best, "shared_cpu_list", geo->shared_cpus,
			    sizeof(geo->shared_cpus)) == 0)
		geo->shared_cpus[strcspn(geo->shared_cpus, "\n")] = '\0';
	if (geo->size > 0 && geo->ways > 0 && geo->page_size > 0)
		geo->colors = (int)(geo->size /
				    ((long long)geo->ways * geo->page_size));
	return 0;
}

int pagecolor_geometry(struct pagecolor_geometry *geo)
{
	return pagecolor_geometry_dir(PAGECOLOR_CPU0_CACHE_DIR, geo);
}
