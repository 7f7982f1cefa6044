// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz the three colour system calls with random arguments (default
 * 100000 calls, or argv[1]) in a child process, then check that the child
 * survived, only documented errnos came back, memory contents are intact
 * and dmesg shows no BUG/WARNING/Oops.  THP is switched to "always" for
 * the run, and a 4 MiB arena of transparent huge pages is bound and
 * migrated in random pieces now and then, so that huge pages are split.
 */
#include "pc_test.h"

#include <limits.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define ARENA	64			/* pages */
#define THP_ARENA	(4UL << 20)		/* bytes, two huge pages */
#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define KADDR	0xffffffff81000000UL

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static unsigned long pick(const unsigned long *v, size_t n)
{
	return v[rnd() % n];
}

static char *arena, *unmapped, *ro, *thp;
static unsigned long *maskbuf;		/* 2 pages, second one PROT_NONE */
static unsigned long *maskend;		/* last long before the guard page */
static long ps;
static unsigned long nr;

static void fill_page(size_t i)
{
	arena[i * ps] = (char)(i ^ 0x5a);
}

static void thp_fill(void)
{
	size_t i;

	for (i = 0; i < THP_ARENA / ps; i++)
		thp[i * ps] = (char)(i ^ 0xa5);
}

/* Bind a random piece of the THP arena to one random colour and migrate. */
static long thp_mbind(void)
{
	unsigned long first = rnd() % (THP_ARENA / ps);
	unsigned long n = 1 + rnd() % (THP_ARENA / ps - first);
	unsigned long mask[PAGECOLOR_SET_LONGS] = { 0 };
	unsigned long c = rnd() % nr;

	/* no more than one colour's share of a small guest holds */
	if (n > 128)
		n = 128;

	mask[c / PAGECOLOR_BITS_PER_LONG] = 1UL << (c % PAGECOLOR_BITS_PER_LONG);
	return pagecolor_sys_color_mbind((unsigned long)thp + first * ps, n * ps,
					 1 + rnd() % 2, mask, nr,
					 COLOR_MBIND_MIGRATE);
}

static unsigned long rand_mask_ptr(int writable_only)
{
	size_t i, nlong = PAGECOLOR_SET_LONGS;
	unsigned int k = (unsigned int)(rnd() % 10);

	/* random contents: sometimes only valid colours, sometimes anything */
	for (i = 0; i < nlong; i++)
		maskbuf[i] = 0;
	switch (rnd() % 4) {
	case 0:
		break;				/* empty */
	case 1:
		maskbuf[0] = rnd();
		if (nr < PAGECOLOR_BITS_PER_LONG)
			maskbuf[0] &= (1UL << nr) - 1;
		break;
	case 2:
		maskbuf[rnd() % nlong] = rnd();
		break;
	default:
		maskbuf[0] = 1UL << (rnd() % (nr < 64 ? nr : 64));
		break;
	}
	switch (k) {
	case 0: return 0;
	case 1: return KADDR;
	case 2: return (unsigned long)unmapped;
	case 3: return writable_only ? (unsigned long)maskbuf : (unsigned long)ro;
	case 4: return (unsigned long)maskend;	/* runs into the guard page */
	case 5: return (unsigned long)maskbuf + 1;	/* unaligned */
	default: return (unsigned long)maskbuf;
	}
}

static unsigned long rand_maxcolor(void)
{
	const unsigned long v[] = { 0, 1, 2, nr - 1, nr, nr + 1, 63, 64, 65,
				    PAGE_COLOR_MAX_COLORS - 1, PAGE_COLOR_MAX_COLORS,
				    PAGE_COLOR_MAX_COLORS + 1, ULONG_MAX,
				    ULONG_MAX / 2, 1UL << 32 };

	if (rnd() % 8 == 0)
		return rnd();
	return pick(v, sizeof(v) / sizeof(v[0]));
}

static int rand_mode(void)
{
	const unsigned long v[] = { 0, 1, 2, 1, 2, 3, (unsigned long)-1, INT_MAX,
				    (unsigned long)INT_MIN };

	return (int)pick(v, sizeof(v) / sizeof(v[0]));
}

static unsigned int rand_flags(void)
{
	const unsigned long v[] = { 0, 0, COLOR_MBIND_MIGRATE, COLOR_MBIND_MIGRATE,
				    2, 3, 0x80000000UL, 0xffffffffUL };

	return (unsigned int)pick(v, sizeof(v) / sizeof(v[0]));
}

static void rand_range(unsigned long *start, unsigned long *len)
{
	unsigned long a = rnd() % ARENA, n = 1 + rnd() % (ARENA - a);

	switch (rnd() % 12) {
	case 0: *start = 0; *len = ps; return;
	case 1: *start = KADDR; *len = ps; return;
	case 2: *start = (unsigned long)unmapped; *len = ps; return;
	case 3: *start = (unsigned long)arena + a * ps + 1 + rnd() % (ps - 1);
		*len = n * ps; return;
	case 4: *start = (unsigned long)arena + a * ps; *len = -(unsigned long)ps; return;
	case 5: *start = (unsigned long)arena + a * ps; *len = 0; return;
	case 6: *start = (unsigned long)arena + a * ps; *len = n * ps - rnd() % ps; return;
	case 7: *start = (unsigned long)arena; *len = (ARENA + 16) * ps; return;
	default: *start = (unsigned long)arena + a * ps; *len = n * ps; return;
	}
}

static int errno_ok(int e)
{
	return e == EINVAL || e == EFAULT || e == ENOMEM || e == EIO ||
	       e == EBUSY || e == EAGAIN || e == EINTR || e == EPERM;
}

static int fuzz(long iterations)
{
	long i, ok = 0, fail = 0, bad_errno = 0, thp_calls = 0, thp_backed = 0;
	long hist[3] = { 0, 0, 0 };
	size_t j;

	arena = mmap(NULL, ARENA * ps, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unmapped = mmap(NULL, ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	maskbuf = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	thp = mmap(NULL, THP_ARENA + PC_HUGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (arena == MAP_FAILED || unmapped == MAP_FAILED || ro == MAP_FAILED ||
	    maskbuf == MAP_FAILED || thp == MAP_FAILED)
		return 2;
	thp = (char *)(((uintptr_t)thp + PC_HUGE - 1) & ~(PC_HUGE - 1));
	madvise(thp, THP_ARENA, MADV_HUGEPAGE);
	thp_fill();
	printf("# THP arena: %d of 2 huge pages THP-backed at the start\n",
	       pc_is_thp(thp) + pc_is_thp(thp + PC_HUGE));
	munmap(unmapped, ps);
	mprotect((char *)maskbuf + ps, ps, PROT_NONE);
	maskend = (unsigned long *)((char *)maskbuf + ps) - 1;
	for (j = 0; j < ARENA; j++)
		fill_page(j);

	for (i = 0; i < iterations; i++) {
		unsigned long start, len, mask, maxc;
		int which = (int)(rnd() % 3), mode;
		long r;

		hist[which]++;
		errno = 0;
		switch (which) {
		case 0:
			mask = rand_mask_ptr(0);
			maxc = rand_maxcolor();
			r = pagecolor_sys_set_color_policy_flags(rand_mode(),
								 (unsigned long *)mask, maxc,
								 rnd() % 4 ? 0 : rand_flags());
			break;
		case 1:
			rand_range(&start, &len);
			mask = rand_mask_ptr(0);
			maxc = rand_maxcolor();
			r = pagecolor_sys_color_mbind(start, len, rand_mode(),
						      (unsigned long *)mask, maxc,
						      rand_flags());
			break;
		default: {
			const unsigned long mp[] = { 0, KADDR, (unsigned long)unmapped,
						     (unsigned long)ro,
						     (unsigned long)&mode };
			unsigned long mpp = pick(mp, 5);

			mask = rand_mask_ptr(1);
			maxc = rand_maxcolor();
			rand_range(&start, &len);
			r = pagecolor_sys_get_color_policy((int *)mpp,
							   (unsigned long *)mask, maxc,
							   start, rand_flags());
			break;
		}
		}
		if (r == 0) {
			ok++;
		} else if (r == -1 && errno_ok(errno)) {
			fail++;
		} else {
			if (bad_errno < 10)
				printf("# call %d returned %ld errno %d (%s)\n", which, r,
				       errno, strerror(errno));
			bad_errno++;
		}
		/* keep the mapping layout moving: holes, refills, touches */
		if (i % 997 == 0) {
			j = rnd() % ARENA;
			munmap(arena + j * ps, ps);
			mmap(arena + j * ps, ps, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			fill_page(j);
		}
		if (i % 5003 == 0) {
			/* make sure we can still allocate under whatever policy */
			pagecolor_sys_set_color_policy(COLOR_MODE_DEFAULT, NULL, 0);
		}
		/* split huge pages: bind and migrate pieces of them */
		if (i % 211 == 0) {
			errno = 0;
			r = thp_mbind();
			/*
			 * A piece of the THP arena is private to this process
			 * and smaller than a colour's share: EIO (pages left
			 * unmoved) is a bug here, e.g. a THP split for the move
			 * counted as a failure (issue 29 item 8).
			 */
			if (r == 0) {
				thp_calls++;
			} else if (!(r == -1 && errno_ok(errno) && errno != EIO)) {
				if (bad_errno < 10)
					printf("# THP mbind returned %ld errno %d (%s)\n",
					       r, errno, strerror(errno));
				bad_errno++;
			}
		}
		/* and make new ones: drop the policies and the pages, refault */
		if (i % 4999 == 0) {
			pagecolor_sys_set_color_policy(COLOR_MODE_DEFAULT, NULL, 0);
			pagecolor_sys_color_mbind((unsigned long)thp, THP_ARENA,
						  COLOR_MODE_DEFAULT, NULL, 0, 0);
			madvise(thp, THP_ARENA, MADV_DONTNEED);
			thp_fill();
			thp_backed += pc_is_thp(thp) + pc_is_thp(thp + PC_HUGE);
		}
	}
	pagecolor_sys_set_color_policy(COLOR_MODE_DEFAULT, NULL, 0);
	for (j = 0; j < THP_ARENA / ps; j++)
		if (thp[j * ps] != (char)(j ^ 0xa5)) {
			printf("# THP arena page %zu corrupted\n", j);
			return 3;
		}
	printf("# THP arena: %ld pieces bound and migrated; %ld huge pages "
	       "after the refaults\n", thp_calls, thp_backed);
	for (j = 0; j < ARENA; j++)
		if (arena[j * ps] != (char)(j ^ 0x5a)) {
			printf("# arena page %zu corrupted\n", j);
			return 3;
		}
	printf("# %ld calls (set %ld, mbind %ld, get %ld): %ld succeeded, %ld failed "
	       "with documented errnos, %ld unexpected\n", iterations, hist[0],
	       hist[1], hist[2], ok, fail, bad_errno);
	return bad_errno ? 1 : 0;
}

/*
 * Migrating THP-backed ranges, deterministic (issue 29 item 8): a fresh
 * huge page, private, bound in a piece to colours with room, must move
 * with no EIO: (0) the whole huge page, (1) a piece in its middle, (2) all
 * but its first page after MADV_DONTNEED zapped that one (the head is no
 * longer mapped).  Returns how many cases failed; 0 when no THP was made.
 */
static int thp_cases(int *made)
{
	static const struct { unsigned long first, n; int zap_head; } cs[] = {
		{ 0, 512, 0 }, { 100, 64, 0 }, { 1, 511, 1 },
	};
	int bad = 0;
	size_t k;

	*made = 0;
	for (k = 0; k < sizeof(cs) / sizeof(cs[0]); k++) {
		char *m = mmap(NULL, 2 * PC_HUGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *h = (char *)(((uintptr_t)m + PC_HUGE - 1) & ~(PC_HUGE - 1));
		pagecolor_set_t s;
		struct pc_check r;
		unsigned long i;
		char list[16];
		long rc;

		if (m == MAP_FAILED)
			return bad + 1;
		madvise(h, PC_HUGE, MADV_HUGEPAGE);
		for (i = 0; i < PC_HUGE / ps; i++)
			h[i * ps] = (char)i;
		if (!pc_is_thp(h)) {
			munmap(m, 2 * PC_HUGE);
			continue;
		}
		(*made)++;
		if (cs[k].zap_head)
			madvise(h, ps, MADV_DONTNEED);
		/* two colours: room for a whole huge page at 256 colours */
		snprintf(list, sizeof(list), "%lu-%lu", (1 + 2 * k) % nr, (2 + 2 * k) % nr);
		s = pc_set(list);
		errno = 0;
		rc = pagecolor_sys_color_mbind((unsigned long)h + cs[k].first * ps,
					       cs[k].n * ps, COLOR_MODE_BIND, s.bits,
					       PAGE_COLOR_MAX_COLORS, COLOR_MBIND_MIGRATE);
		if (pc_check_range(h + cs[k].first * ps, cs[k].n, &s, &r))
			r.bad = r.absent = cs[k].n;
		for (i = cs[k].zap_head; i < PC_HUGE / ps; i++)
			if (h[i * ps] != (char)i)
				r.bad++;
		printf("# THP case %zu (pages %lu-%lu%s): rc %ld (%s), %zu of %lu pages "
		       "outside colours %s or changed\n", k, cs[k].first,
		       cs[k].first + cs[k].n - 1, cs[k].zap_head ? ", head zapped" : "",
		       rc, rc ? strerror(errno) : "ok", r.bad + r.absent, cs[k].n, list);
		if (rc || r.bad || r.absent)
			bad++;
		munmap(m, 2 * PC_HUGE);
	}
	return bad;
}

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 100000;
	int st, trouble;
	pid_t pid;

	pc_init(5);
	ps = pc_page_size;
	nr = (unsigned long)pc_nr_colors;
	if (argc > 2)
		rng = strtoull(argv[2], NULL, 0);
	tap_diag("%ld iterations, seed 0x%llx", iterations, (unsigned long long)rng);
	trouble = pc_dmesg_trouble();
	tap_ok(trouble == 0, "dmesg clean before fuzzing");
	if (pc_write_file(THP_ENABLED, "always"))
		tap_diag("%s: %s", THP_ENABLED, strerror(errno));
	{
		int made, bad;

		ps = pc_page_size;
		bad = thp_cases(&made);
		tap_ok(made && !bad, "THP-backed ranges migrate without EIO: %d of %d "
		       "cases failed (THP made in %d)", bad, 3, made);
	}
	pid = fork();
	if (pid == 0)
		_exit(fuzz(iterations));
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		tap_ok(0, "fuzz child ran");
		return tap_finish();
	}
	pc_write_file(THP_ENABLED, "madvise");
	tap_ok(WIFEXITED(st), "fuzz child survived %ld calls (status 0x%x)", iterations, st);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "only documented errnos, memory contents intact");
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg after fuzzing");
	return tap_finish();
}
