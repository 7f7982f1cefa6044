/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * llcsim guest workloads (static binary for the busybox initramfs).
 *
 *   llcsim phys N                 N pages: print PFN-derived physical address,
 *                                 then a traced load (the plugin logs its PA)
 *   llcsim sweep LLC_KIB TAG0     pointer chase over 0.25x..4x LLC, one tag each
 *   llcsim run SPEC TAG           one worker alone on CPU 0, fixed work
 *   llcsim pair VSPEC ASPEC TAGV TAGA
 *                                 victim (CPU 0, fixed work) and aggressor
 *                                 (CPU 1, runs until the victim is done)
 *   llcsim time SPEC              the same work natively: wall-clock ns per
 *                                 unit (data on transparent huge pages
 *                                 unless the SPEC says /4k)
 *   llcsim op begin|end|resume|flush [TAG] | op ways MASK
 *                                 one control command on the CPU this runs
 *                                 on, for a region another process (e.g. a
 *                                 PostgreSQL backend pinned there) executes
 *
 * SPEC = kind/a/b[/c=LIST][/pc=LIST][/pk=KIB][/w=MASK][/rg=NAME@MASK][/cpu=N]   ('/' separated; LIST like 0-15)
 *   chase/KIB/PASSES     random cyclic pointer chase, one node per 64 B line
 *                        (k=K: K serially dependent adds of zero to the
 *                        pointer after each load, a multiple of 64, as
 *                        mccdb_bench/llc_knee.c's ADDS: a paced chase)
 *   stream/KIB/LINES     sequential read, one 8-byte word per 64 B line
 *   rand/KIB/LOADS       independent random loads, one 8-byte word of a
 *                        random 64 B line each (the address comes from a
 *                        generator in registers, never from a loaded value)
 *   gap/KIB/LOADS/k=K    rand's loads, K serially dependent adds after each
 *                        (K a multiple of 64; the adds use no loaded value):
 *                        how much of a miss a window of instructions hides
 *   hash/ENTRIES/PROBES  hash-join probe loop: bucket array (4 B) + chained
 *                        32 B entries (buckets and chains hold 32-bit
 *                        pointers to entries mapped below 4 GiB, so that
 *                        the simulator sees a chain followed as the
 *                        dependent load it is), probe keys read sequentially from a
 *                        pk-KiB array (default 8192) of random existing keys
 *   c=LIST   task default colour policy BIND LIST before allocating (all data)
 *   pc=LIST  colour_mbind BIND LIST on the hash probe-key array only
 *   w=MASK   the worker's vCPU fills only these LLC ways while it runs
 *   rg=NAME@MASK  the same through resctrl: the worker makes group NAME in
 *            the agent's tree (`llcsim resctrl`), writes MASK for every L3
 *            domain to its schemata and its pid to its tasks, and waits
 *            until the agent has set the mask on its vCPU
 *            (the simulator's CAT; 0x00ff = ways 0-7)
 *   cpu=N    run on vCPU N (default: 0 alone and victim, 1 aggressor)
 *   thp      the data (not the hash entries, which need 32-bit pointers) on
 *            transparent huge pages: 2 MiB aligned, MADV_HUGEPAGE (`time`
 *            does this for every SPEC)
 *   4k       the data on 4 KiB pages (MADV_NOHUGEPAGE), `time` too
 *   rw       stream: increment its word of each line (a read and a write
 *            back, as mccdb_bench/stream_antagonist.c does) instead of reading it
 * Output lines: "LLCSIM-RUN tag=.. role=.. spec=.. units=.. cpu=.." and
 * "LLCSIM-COLORS ..." (colours actually found through /proc/self/pagemap).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pagecolor.h"
#include "llcsim_guest.h"
#include "resctrl_agent.h"

enum kind { K_CHASE, K_STREAM, K_HASH, K_RAND, K_GAP };

/* next: a 32-bit pointer (MAP_32BIT), 0 at the end of the chain */
struct entry { uint64_t key, payload; uint32_t next, pad[3]; };

struct work {
	enum kind kind;
	long a, b;
	char colors[64], pcolors[64];
	long pk_kib;
	long gapk;	/* gap, chase: dependent adds after each load (a multiple of 64) */
	int mode;	/* COLOR_MODE_BIND, or COLOR_MODE_PREFERRED with /pref */
	unsigned long ways;	/* w=: LLC way mask, 0 = all */
	char rgroup[32];	/* rg=: resctrl group (through the agent), "" = none */
	unsigned long rmask;	/* rg=: the group's L3 mask */
	int cpu;	/* cpu=: vCPU, -1 = the role's default */
	int pages;	/* thp: 1, 4k: 2, 0: as the command says */
	int rw;		/* stream: write each line back (rw) */
	const char *spec;
	/* data */
	void **chase; size_t nlines; void **cur;
	uint64_t *stream; size_t nwords, pos;
	uint64_t rstate;
	uint32_t *buckets; struct entry *ent; unsigned bshift;
	uint64_t *keys; size_t nkeys, kpos;
	uint64_t sink;
};

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13; x ^= x >> 7; x ^= x << 17;
	return rng_state = x;
}

static void die(const char *m)
{
	fprintf(stderr, "llcsim: %s: %s\n", m, strerror(errno));
	exit(1);
}

/* 1: transparent huge pages (`time`, /thp), 2: 4 KiB pages (/4k), 0: the
 * kernel's default */
static int huge_pages;

#define HUGE (2UL << 20)

static void *alloc(size_t bytes)
{
	/* THP: whole 2 MiB pages inside the mapping, from an aligned start */
	size_t map = huge_pages == 1 ? ((bytes + HUGE - 1) & ~(HUGE - 1)) + HUGE : bytes;
	char *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	if (huge_pages == 1) {	/* 2 MiB aligned, so that every 2 MiB of it can be one page */
		p = (char *)(((uintptr_t)p + HUGE - 1) & ~(HUGE - 1));
		madvise(p, map - HUGE, MADV_HUGEPAGE);
	} else if (huge_pages == 2) {
		madvise(p, bytes, MADV_NOHUGEPAGE);
	}
	return p;
}

/* Memory below 4 GiB, for 32-bit pointers. */
static void *alloc32(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (p == MAP_FAILED)
		die("mmap MAP_32BIT");
	return p;
}

static uint32_t ptr32(const void *p)
{
	return (uint32_t)(uintptr_t)p;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static void parse_spec(struct work *w, const char *spec)
{
	char buf[256], *tok, *save;
	int i = 0;
	memset(w, 0, sizeof(*w));
	w->spec = spec;
	w->pk_kib = 8192;
	w->mode = COLOR_MODE_BIND;
	w->cpu = -1;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save), i++) {
		if (i == 0) {
			if (!strcmp(tok, "chase")) w->kind = K_CHASE;
			else if (!strcmp(tok, "stream")) w->kind = K_STREAM;
			else if (!strcmp(tok, "hash")) w->kind = K_HASH;
			else if (!strcmp(tok, "rand")) w->kind = K_RAND;
			else if (!strcmp(tok, "gap")) w->kind = K_GAP;
			else { fprintf(stderr, "llcsim: bad kind %s\n", tok); exit(2); }
		} else if (!strncmp(tok, "c=", 2)) {
			snprintf(w->colors, sizeof(w->colors), "%s", tok + 2);
		} else if (!strncmp(tok, "pc=", 3)) {
			snprintf(w->pcolors, sizeof(w->pcolors), "%s", tok + 3);
		} else if (!strcmp(tok, "pref")) {
			w->mode = COLOR_MODE_PREFERRED;
		} else if (!strncmp(tok, "k=", 2) && atol(tok + 2) >= 0 && atol(tok + 2) % 64 == 0) {
			w->gapk = atol(tok + 2);
		} else if (!strncmp(tok, "pk=", 3)) {
			w->pk_kib = atol(tok + 3);
		} else if (!strncmp(tok, "w=", 2)) {
			w->ways = strtoul(tok + 2, NULL, 0);
		} else if (!strncmp(tok, "rg=", 3) && strchr(tok, '@')) {
			snprintf(w->rgroup, sizeof(w->rgroup), "%.*s", (int)(strchr(tok, '@') - tok - 3), tok + 3);
			w->rmask = strtoul(strchr(tok, '@') + 1, NULL, 0);
		} else if (!strncmp(tok, "cpu=", 4)) {
			w->cpu = atoi(tok + 4);
		} else if (!strcmp(tok, "thp")) {
			w->pages = 1;
		} else if (!strcmp(tok, "4k")) {
			w->pages = 2;
		} else if (!strcmp(tok, "rw")) {
			w->rw = 1;
		} else if (i == 1) {
			w->a = atol(tok);
		} else if (i == 2) {
			w->b = atol(tok);
		} else {
			fprintf(stderr, "llcsim: bad spec item %s\n", tok);
			exit(2);
		}
	}
}

static int parse_colors(const char *list, pagecolor_set_t *set)
{
	if (!list[0] || !strcmp(list, "all"))
		return 0;
	if (!pagecolor_supported()) {
		fprintf(stderr, "llcsim: colours '%s' requested but page colouring unsupported\n", list);
		exit(3);
	}
	if (pagecolor_set_parse(set, list, pagecolor_nr_colors()))
		die("colour list");
	return 1;
}

/* Share of sampled pages of [p, p+bytes) whose colour is in list. */
static void report_colors(const char *what, const void *p, size_t bytes, const char *list)
{
	pagecolor_set_t set;
	size_t pages = bytes / 4096, step = pages > 2048 ? pages / 2048 : 1, i, n = 0, in = 0;
	int col, any = 0, nc = pagecolor_nr_colors(), hist[64] = { 0 }, k, len = 0;
	char h[400];
	if (!pagecolor_supported())
		return;
	any = !parse_colors(list, &set);
	for (i = 0; i < pages; i += step) {
		col = pagecolor_page_color((const char *)p + i * 4096);
		if (col < 0)
			continue;
		n++;
		in += any || pagecolor_set_test(&set, col);
		if (col < 64)
			hist[col]++;
	}
	h[0] = 0;
	for (k = 0; k < nc && k < 64; k++)
		len += snprintf(h + len, sizeof(h) - (size_t)len, "%s%d", k ? "," : "", hist[k]);
	printf("LLCSIM-COLORS pid=%d %s want=%s sampled=%zu inside=%zu hist=%s\n", getpid(), what,
	       list[0] ? list : "all", n, in, h);
}

static void setup(struct work *w)
{
	pagecolor_set_t set;
	size_t i;
	if (parse_colors(w->colors, &set) && pagecolor_set_policy(w->mode, &set))
		die("set_color_policy");
	if (w->pages)
		huge_pages = w->pages;
	switch (w->kind) {
	case K_CHASE: {
		size_t n = (size_t)w->a * 1024 / 64, *perm;
		w->nlines = n;
		w->chase = alloc(n * 64);
		perm = malloc(n * sizeof(*perm));
		for (i = 0; i < n; i++)
			perm[i] = i;
		for (i = n - 1; i > 0; i--) {
			size_t j = rnd() % (i + 1), t = perm[i];
			perm[i] = perm[j]; perm[j] = t;
		}
		for (i = 0; i < n; i++)
			w->chase[perm[i] * 8] = &w->chase[perm[(i + 1) % n] * 8];
		free(perm);
		w->cur = w->chase;
		report_colors("chase", w->chase, n * 64, w->colors);
		break;
	}
	case K_STREAM:
	case K_RAND:
	case K_GAP:
		w->nwords = (size_t)w->a * 1024 / 8;
		w->stream = alloc(w->nwords * 8);
		for (i = 0; i < w->nwords; i++)
			w->stream[i] = i;
		w->rstate = 1;
		report_colors(w->kind == K_STREAM ? "stream" : "rand", w->stream, w->nwords * 8, w->colors);
		break;
	case K_HASH: {
		size_t n = (size_t)w->a, nb = 1;
		unsigned bits = 0;
		while (nb < n) { nb <<= 1; bits++; }
		w->bshift = 64 - bits;
		w->buckets = alloc(nb * 4);
		w->ent = alloc32(n * sizeof(struct entry));
		for (i = 0; i < n; i++) {
			uint64_t k = mix(i + 1);
			size_t b = (size_t)((k * 0x9E3779B97F4A7C15ull) >> w->bshift);
			w->ent[i].key = k;
			w->ent[i].payload = i;
			w->ent[i].next = w->buckets[b];
			w->buckets[b] = ptr32(&w->ent[i]);
		}
		w->nkeys = (size_t)w->pk_kib * 1024 / 8;
		w->keys = alloc(w->nkeys * 8);
		if (parse_colors(w->pcolors, &set) &&
		    pagecolor_mbind(w->keys, w->nkeys * 8, w->mode, &set, 0))
			die("color_mbind");
		for (i = 0; i < w->nkeys; i++)
			w->keys[i] = mix(rnd() % n + 1);
		report_colors("hash-table", w->ent, n * sizeof(struct entry), w->colors);
		report_colors("probe-keys", w->keys, w->nkeys * 8,
			      w->pcolors[0] ? w->pcolors : w->colors);
		printf("LLCSIM-HASH pid=%d entries=%zu buckets=%zu table_kib=%zu keys_kib=%ld\n",
		       getpid(), n, nb, (nb * 4 + n * sizeof(struct entry)) / 1024, w->pk_kib);
		break;
	}
	}
}

/* Do `units` units of work (chase: loads, stream: lines, hash: probes). */
static void step(struct work *w, long units)
{
	long u;
	switch (w->kind) {
	case K_CHASE: {
		void **p = w->cur;
		uint64_t z = 0;
		long j, n = w->gapk / 64;

		__asm__("" : "+r"(z));	/* 0, unknown to the compiler */
		for (u = 0; u < units; u++) {
			p = (void **)*p;
			for (j = 0; j < n; j++)	/* p += 0, 64 times, in series */
				__asm__ volatile(".rept 64\n\tadd %1, %0\n\t.endr" : "+r"(p) : "r"(z));
		}
		w->cur = p;
		break;
	}
	case K_STREAM: {
		uint64_t s = w->sink;
		size_t pos = w->pos;
		if (w->rw) {
			/* stream_antagonist's loop: an increment a line, the
			 * wrap tested once a run, not at every line */
			for (u = 0; u < units;) {
				long run = (long)((w->nwords - pos + 7) / 8);
				volatile uint64_t *p = w->stream + pos, *end;

				if (run > units - u)
					run = units - u;
				for (end = p + 8 * run; p < end; p += 8)
					++*p;
				u += run;
				pos += 8 * (size_t)run;
				if (pos >= w->nwords)
					pos = 0;
			}
		} else {
			for (u = 0; u < units; u++) {
				s += w->stream[pos];
				pos += 8;
				if (pos >= w->nwords)
					pos = 0;
			}
		}
		w->pos = pos;
		w->sink = s;
		break;
	}
	case K_RAND: {
		uint64_t s = w->sink, x = w->rstate, nl = w->nwords / 8;
		for (u = 0; u < units; u++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			s += w->stream[((x >> 32) * nl >> 32) * 8];
		}
		w->rstate = x;
		w->sink = s;
		break;
	}
	case K_GAP: {
		uint64_t s = w->sink, x = w->rstate, nl = w->nwords / 8, g = 0;
		long j, n = w->gapk / 64;
		for (u = 0; u < units; u++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			s += w->stream[((x >> 32) * nl >> 32) * 8];
			for (j = 0; j < n; j++)	/* g = g + x, 64 times: a dependent chain */
				__asm__ volatile(".rept 64\n\tadd %1, %0\n\t.endr" : "+r"(g) : "r"(x));
		}
		w->rstate = x;
		w->sink = s + g;
		break;
	}
	case K_HASH: {
		uint64_t s = w->sink;
		size_t kp = w->kpos;
		for (u = 0; u < units; u++) {
			uint64_t k = w->keys[kp];
			uint32_t b = w->buckets[(k * 0x9E3779B97F4A7C15ull) >> w->bshift];
			if (++kp == w->nkeys)
				kp = 0;
			while (b) {
				const struct entry *e = (const struct entry *)(uintptr_t)b;
				if (e->key == k) {
					s += e->payload;
					break;
				}
				b = e->next;
			}
		}
		w->kpos = kp;
		w->sink = s;
		break;
	}
	}
}

static long fixed_units(const struct work *w)
{
	return w->kind == K_CHASE ? w->b * (long)w->nlines : w->b;
}

static long warm_units(const struct work *w)
{
	switch (w->kind) {
	case K_CHASE: return 2 * (long)w->nlines;
	case K_STREAM: return 0;
	case K_RAND: return w->b / 4;
	case K_GAP: return w->b / 4;
	case K_HASH: return w->b / 4;
	}
	return 0;
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s))
		die("sched_setaffinity");
	sched_yield();
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f))
		die(path);
}

/* Join resctrl group w->rgroup as a program written for resctrl would, and
 * wait until the agent has given this vCPU the group's mask. */
static void join_group(const struct work *w)
{
	char path[256], text[256], line[64], *p;
	int used, cpu = sched_getcpu();
	struct timespec t0, t1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/schemata", RESCTRL_AGENT_ROOT);
	f = fopen(path, "r");
	if (!f || !fgets(text, sizeof(text), f))
		die("the agent's root schemata (llcsim resctrl first)");
	fclose(f);
	/* the root's "L3:0=ffff;1=ffff" with the group's mask for each id */
	used = snprintf(line, sizeof(line), "L3:");
	for (p = strchr(text, ':'); p && used < (int)sizeof(line) - 24; p = strchr(p, ';'))
		used += snprintf(line + used, sizeof(line) - (size_t)used, "%s%ld=%lx",
				 used > 3 ? ";" : "", strtol(++p, NULL, 10), w->rmask);
	strcat(line, "\n");
	snprintf(path, sizeof(path), "%s/%s", RESCTRL_AGENT_ROOT, w->rgroup);
	if (mkdir(path, 0755) && errno != EEXIST)
		die(path);
	snprintf(path, sizeof(path), "%s/%s/schemata", RESCTRL_AGENT_ROOT, w->rgroup);
	write_text(path, line);
	snprintf(path, sizeof(path), "%s/%s/tasks", RESCTRL_AGENT_ROOT, w->rgroup);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {	/* the agent gives a new group its tasks FIFO */
		struct stat st;

		if (!stat(path, &st) && S_ISFIFO(st.st_mode))
			break;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > 30) {
			fprintf(stderr, "llcsim: no tasks FIFO in %s/%s after 30 s\n", RESCTRL_AGENT_ROOT, w->rgroup);
			exit(1);
		}
	}
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	write_text(path, text);
	snprintf(path, sizeof(path), "%s/info/llcsim_applied", RESCTRL_AGENT_ROOT);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {	/* running (state R) until the agent saw us */
		int c;
		unsigned long m;

		f = fopen(path, "r");
		while (f && fgets(text, sizeof(text), f))
			if (sscanf(text, "%d %lx", &c, &m) == 2 && c == cpu && m == w->rmask) {
				fclose(f);
				return;
			}
		if (f)
			fclose(f);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > 30) {
			fprintf(stderr, "llcsim: the resctrl agent did not set %lx on vCPU %d in 30 s\n",
				w->rmask, cpu);
			exit(1);
		}
	}
}

/* Back to the root group. */
static void leave_group(void)
{
	char path[256], text[32];

	snprintf(path, sizeof(path), "%s/tasks", RESCTRL_AGENT_ROOT);
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	write_text(path, text);
}

/*
 * Run on the worker's vCPU (or the role's), with its LLC way mask.  A mask
 * limits where misses fill, not where lookups hit (as CAT does), so lines
 * an earlier run left in other ways would still hit: with a mask, start
 * from empty caches so the mask alone decides what the worker keeps.
 */
static void place(const struct work *w, int role_cpu)
{
	pin(w->cpu >= 0 ? w->cpu : role_cpu);
	if (w->ways) {
		llcsim_op(LLCSIM_FLUSH, 0);
		llcsim_op(LLCSIM_WAYS, (uint32_t)w->ways);
	}
	if (w->rgroup[0]) {
		join_group(w);
		llcsim_op(LLCSIM_FLUSH, 0);
	}
}

/* The vCPU's way mask back to all ways. */
static void unplace(const struct work *w)
{
	if (w->ways)
		llcsim_op(LLCSIM_WAYS, 0);
	if (w->rgroup[0])
		leave_group();
}

static void run_fixed(struct work *w, int tag, const char *role)
{
	long units = fixed_units(w);
	step(w, warm_units(w));
	llcsim_op(LLCSIM_BEGIN, (uint32_t)tag);
	step(w, units);
	llcsim_op(LLCSIM_END, (uint32_t)tag);
	printf("LLCSIM-RUN tag=%d role=%s spec=%s units=%ld cpu=%d sink=%llu\n", tag, role,
	       w->spec, units, sched_getcpu(), (unsigned long long)(w->sink + (uintptr_t)w->cur % 2));
	fflush(stdout);
}

/* `time SPEC`: the fixed work natively, wall-clock ns per unit. */
static int cmd_time(const char *spec)
{
	struct work w;
	struct timespec t0, t1;
	long units;
	double ns;

	huge_pages = 1;
	pin(0);
	parse_spec(&w, spec);
	setup(&w);
	units = fixed_units(&w);
	step(&w, warm_units(&w));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	step(&w, units);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("LLCSIM-TIME spec=%s units=%ld ns=%.0f ns_per_unit=%.3f sink=%llu\n", spec, units, ns,
	       ns / units, (unsigned long long)(w.sink + (uintptr_t)w.cur % 2));
	return 0;
}

static int cmd_phys(int n)
{
	char *buf = alloc((size_t)n * 4096);
	int i, fails = 0;
	for (i = 0; i < n; i++)
		buf[(size_t)i * 4096] = 1;
	llcsim_stub(LLCSIM_TRACE, 1, 1);
	printf("1..%d\n", n);
	for (i = 0; i < n; i++) {
		const char *p = buf + (size_t)i * 4096 + 8 * (i % 500);
		uint64_t pfn;
		if (pagecolor_pfn(p, &pfn)) {
			printf("not ok %d - pagemap pfn: %s\n", i + 1, strerror(errno));
			fails++;
			continue;
		}
		printf("LLCSIM-PHYS i=%d vaddr=%p pa=0x%llx\n", i, (const void *)p,
		       (unsigned long long)(pfn << 12 | ((uintptr_t)p & 4095)));
		fflush(stdout);
		llcsim_trace_load(p);
		printf("ok %d - page %d pfn 0x%llx\n", i + 1, i, (unsigned long long)pfn);
	}
	return fails ? 1 : 0;
}

static int cmd_sweep(long llc_kib, int tag0)
{
	static const double frac[] = { 0.25, 0.5, 0.75, 0.875, 1.0, 1.125, 1.25, 1.5, 2, 3, 4 };
	size_t k;
	pin(0);
	for (k = 0; k < sizeof(frac) / sizeof(frac[0]); k++) {
		struct work w;
		char spec[64];
		long kib = (long)(frac[k] * (double)llc_kib);
		long lines = kib * 1024 / 64, passes = 300000 / lines;
		if (passes < 3)
			passes = 3;
		snprintf(spec, sizeof(spec), "chase/%ld/%ld", kib, passes);
		parse_spec(&w, strdup(spec));
		setup(&w);
		llcsim_prepare((uint32_t)tag0 + (uint32_t)k);
		run_fixed(&w, tag0 + (int)k, "sweep");
		munmap(w.chase, w.nlines * 64);
	}
	return 0;
}

struct shared { volatile int ready, measuring, stop, abort; volatile long aunits; };

static int cmd_pair(const char *vspec, const char *aspec, int tagv, int taga)
{
	struct shared *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pv, pa;
	int st, rc = 0;
	if (sh == MAP_FAILED)
		die("mmap shared");
	memset((void *)sh, 0, sizeof(*sh));
	fflush(stdout);
	pa = fork();
	if (pa == 0) {
		struct work w;
		long units = 0, chunk;
		int begun = 0;
		parse_spec(&w, aspec);
		place(&w, 1);
		setup(&w);
		llcsim_prepare((uint32_t)taga);
		chunk = w.kind == K_HASH ? 256 : 1024;
		fflush(stdout);
		sh->ready = 1;
		while (!sh->stop) {
			step(&w, chunk);
			if (begun)
				units += chunk;
			else if (sh->measuring) {
				llcsim_op(LLCSIM_BEGIN, (uint32_t)taga);
				begun = 1;
			}
		}
		llcsim_op(LLCSIM_END, (uint32_t)taga);
		unplace(&w);
		printf("LLCSIM-RUN tag=%d role=aggressor spec=%s units=%ld cpu=%d sink=%llu\n", taga,
		       aspec, units, sched_getcpu(), (unsigned long long)(w.sink + (uintptr_t)w.cur % 2));
		fflush(stdout);
		_exit(0);
	}
	pv = fork();
	if (pv == 0) {
		struct work w;
		parse_spec(&w, vspec);
		place(&w, 0);
		setup(&w);
		llcsim_prepare((uint32_t)tagv);
		while (!sh->ready && !sh->abort)
			;
		if (sh->abort) {
			printf("LLCSIM-ERROR victim: the aggressor died before it was ready\n");
			_exit(1);
		}
		step(&w, warm_units(&w));
		llcsim_op(LLCSIM_BEGIN, (uint32_t)tagv);
		sh->measuring = 1;
		step(&w, fixed_units(&w));
		llcsim_op(LLCSIM_END, (uint32_t)tagv);
		unplace(&w);
		sh->stop = 1;
		printf("LLCSIM-RUN tag=%d role=victim spec=%s units=%ld cpu=%d sink=%llu\n", tagv,
		       vspec, fixed_units(&w), sched_getcpu(),
		       (unsigned long long)(w.sink + (uintptr_t)w.cur % 2));
		fflush(stdout);
		_exit(0);
	}
	for (int left = 2; left > 0; left--) {
		pid_t p = wait(&st);
		if (p < 0)
			break;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			rc = 1;
			printf("LLCSIM-ERROR %s pid %d: %s %d\n", p == pa ? "aggressor" : "victim", p,
			       WIFSIGNALED(st) ? "signal" : "exit status",
			       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		}
		if (p == pa)
			sh->abort = 1;
		else
			sh->stop = 1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "phys"))
		return cmd_phys(atoi(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "sweep"))
		return cmd_sweep(atol(argv[2]), atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "run")) {
		struct work w;
		parse_spec(&w, argv[2]);
		place(&w, 0);
		setup(&w);
		llcsim_prepare((uint32_t)atoi(argv[3]));
		run_fixed(&w, atoi(argv[3]), "alone");
		unplace(&w);
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "resctrl"))
		return resctrl_agent_start(argv[2], atoi(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "time"))
		return cmd_time(argv[2]);
	if (argc >= 6 && !strcmp(argv[1], "pair"))
		return cmd_pair(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
	if (argc >= 3 && !strcmp(argv[1], "op")) {
		static const char *const ops[] = { "begin", "end", "resume", "trace", "flush", "ways" };
		uint32_t cmd;

		for (cmd = 0; cmd < 6; cmd++)
			if (!strcmp(argv[2], ops[cmd]))
				break;
		if (cmd == 5) {
			llcsim_op(LLCSIM_WAYS, argc >= 4 ? (uint32_t)strtoul(argv[3], NULL, 0) : 0);
			return 0;
		}
		if (cmd < 5 && cmd != 3) {
			llcsim_op(cmd + 1, argc >= 4 ? (uint32_t)atoi(argv[3]) : 0);
			return 0;
		}
	}
	fprintf(stderr, "usage: llcsim phys N | sweep LLC_KIB TAG0 | run SPEC TAG | "
		"pair VSPEC ASPEC TAGV TAGA | time SPEC | op begin|end|resume|flush [TAG] | op ways MASK | "
		"resctrl DIR WAYS\n");
	return 2;
}
