// SPDX-License-Identifier: GPL-2.0
/*
 * Several processes fork, colour, touch, copy-on-write, unmap and exit in a
 * loop; afterwards the system is clean: every child exited 0 with its pages
 * in the allowed colours, no BUG/WARNING in dmesg, and free memory is back
 * at its baseline (no pages lost).  The per-colour counts in free_pages are
 * pages parked in the colour lists (allocated memory, not in MemFree, as
 * pages on the per-cpu lists); they must add up to the "parked" counter,
 * MemFree plus them must be back at the baseline, and after a drain they
 * are zero and MemFree has grown by what they held.
 *
 * usage: color_stress [WORKERS [ROUNDS]]
 */
#include "pc_test.h"

#include <sys/mman.h>
#include <sys/wait.h>

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static void rand_set(pagecolor_set_t *s)
{
	int n = 1 + (int)(rnd() % (unsigned)(pc_nr_colors > 8 ? pc_nr_colors / 4 : 1));
	int i;

	pagecolor_set_zero(s);
	for (i = 0; i < n; i++)
		pagecolor_set_add(s, (int)(rnd() % (unsigned)pc_nr_colors));
}

/* One short-lived process.  Returns 0 when everything it checked was fine. */
static int one_child(size_t per_color)
{
	pagecolor_set_t s, t;
	size_t n = 64 + rnd() % 448, cap;
	int shared = rnd() % 3 == 0, mode, bad = 0, eio = 0, st, fewer;
	char *p, *q;
	pid_t g;

	rand_set(&s);
	rand_set(&t);
	/*
	 * The child, its grandchild's copies and the remap fault up to 2.5 n
	 * pages of these colours: keep that within what the fewer colours
	 * have free (a quarter, with three other workers beside), or a bind
	 * policy runs out and the OOM killer ends the child (at 1,024 colours
	 * in a 1 GiB guest a colour has about 240 free pages).
	 */
	fewer = pagecolor_set_count(&s) < pagecolor_set_count(&t) ?
		pagecolor_set_count(&s) : pagecolor_set_count(&t);
	cap = (size_t)fewer * per_color / 4;
	if (n > cap)
		n = cap > 8 ? cap : 8;
	mode = rnd() % 4 == 0 ? COLOR_MODE_PREFERRED : COLOR_MODE_BIND;
	if (rnd() % 2) {
		if (pagecolor_set_policy(mode, &s)) {
			tap_diag("set_color_policy: %s", strerror(errno));
			return 10;
		}
	}
	p = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		 (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 11;
	if (pagecolor_mbind(p, n * pc_page_size, COLOR_MODE_BIND, &s, 0)) {
		tap_diag("color_mbind: %s", strerror(errno));
		return 12;
	}
	pc_touch(p, n);
	if (!pc_range_ok(p, n, &s, "stress child"))
		bad = 1;
	g = fork();
	if (g == 0) {
		pc_touch(p, n / 2);
		if (!pc_range_ok(p, n / 2, &s, "stress grandchild"))
			_exit(1);
		munmap(p, n * pc_page_size);
		_exit(0);
	}
	/* re-colour part of the range while the grandchild runs */
	if (pagecolor_mbind(p + n / 2 * pc_page_size, (n - n / 2) * pc_page_size,
			    COLOR_MODE_BIND, &t, COLOR_MBIND_MIGRATE)) {
		/*
		 * EIO is documented: pages that could not be isolated or
		 * moved, here because the grandchild unmaps them at the same
		 * time.  Count it (exit code 2), anything else is a failure.
		 */
		if (errno != EIO) {
			tap_diag("color_mbind(MIGRATE) of %zu %s pages: %s",
				 n - n / 2, shared ? "shared" : "private", strerror(errno));
			bad = 1;
		} else if (!bad) {
			eio = 1;
		}
	} else if (!pc_range_ok(p + n / 2 * pc_page_size, n - n / 2, &t, "stress migrate"))
		bad = 1;
	munmap(p, n / 4 * pc_page_size);
	q = mremap(p + n / 4 * pc_page_size, (n - n / 4) * pc_page_size,
		   n * pc_page_size, MREMAP_MAYMOVE);
	if (q != MAP_FAILED && !shared)
		pc_touch(q, n);
	if (g < 0 || waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st)) {
		tap_diag("grandchild status 0x%x", st);
		bad = 1;
	}
	return bad ? 1 : eio ? 2 : 0;
}

static int worker(int id, int rounds, int fd, size_t per_color)
{
	int r, st, bad = 0, eio = 0;

	rng = 0x1234567ULL * (uint64_t)(id + 1) + (uint64_t)getpid();
	for (r = 0; r < rounds; r++) {
		pid_t pid;

		rnd();		/* each round's child draws its own case */
		pid = fork();
		if (pid == 0)
			_exit(one_child(per_color));
		if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 2) {
			eio++;
			continue;
		}
		if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("# worker %d round %d: child status 0x%x\n", id, r, st);
			bad++;
		}
	}
	if (write(fd, &eio, sizeof(eio)) != sizeof(eio))
		bad++;
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	int workers = argc > 1 ? atoi(argv[1]) : 4;
	int rounds = argc > 2 ? atoi(argv[2]) : 40;
	static unsigned long before[PAGE_COLOR_MAX_COLORS], after[PAGE_COLOR_MAX_COLORS];
	long long free0, free1, free2, tot0, tot1, tot2, tol;
	unsigned long long fail0 = 0, fb0 = 0;
	int i, st, failed = 0, trouble, c, worst = 0, ok, fds[2], eio_total = 0;
	long long worst_diff = 0;

	pc_init(6);
	trouble = pc_dmesg_trouble();
	pc_settle();
	free0 = pc_memfree_pages();
	tot0 = pc_free_total(before, PAGE_COLOR_MAX_COLORS);
	tap_ok(free0 > 0 && tot0 >= 0, "baseline: MemFree %lld pages, colour lists %lld pages",
	       free0, tot0);

	pagecolor_read_counter("failures", &fail0);
	pagecolor_read_counter("fallbacks", &fb0);
	if (pipe(fds))
		return tap_finish();
	for (i = 0; i < workers; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(worker(i, rounds, fds[1], (size_t)free0 / (size_t)pc_nr_colors));
		if (pid < 0)
			failed++;
	}
	close(fds[1]);
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			failed++;
	while (read(fds[0], &i, sizeof(i)) == sizeof(i))
		eio_total += i;
	tap_diag("%d of %d rounds: color_mbind(MIGRATE) answered EIO (documented: pages "
		 "being unmapped by the exiting grandchild)", eio_total, workers * rounds);
	{
		unsigned long long f1 = 0, fb1 = 0;

		pagecolor_read_counter("failures", &f1);
		pagecolor_read_counter("fallbacks", &fb1);
		tap_diag("counters during the run: failures +%llu, fallbacks +%llu",
			 f1 - fail0, fb1 - fb0);
	}
	tap_ok(failed == 0, "%d workers x %d rounds of fork/colour/touch/COW/unmap/exit",
	       workers, rounds);
	tap_ok(pc_dmesg_trouble() == trouble, "no BUG/WARNING/Oops in dmesg");

	pc_settle();
	free1 = pc_memfree_pages();
	tot1 = pc_free_total(after, PAGE_COLOR_MAX_COLORS);
	/*
	 * Parked pages (the per-colour lists) are not in MemFree: MemFree plus
	 * them must come back.  Tolerance: per-CPU page lists, slab and
	 * page-table caches fluctuate by a few hundred pages; one leaked child
	 * would be thousands of pages.
	 */
	tol = 1024;
	tap_diag("MemFree %lld -> %lld pages, parked in colour lists %lld -> %lld pages",
		 free0, free1, tot0, tot1);
	tap_ok(tot1 >= 0 && free1 + tot1 >= free0 + tot0 - tol,
	       "MemFree plus parked pages back to baseline (within %lld pages)", tol);
	{
		unsigned long long parked = 0;

		pagecolor_read_counter("parked", &parked);
		tap_ok(tot1 >= 0 && (unsigned long long)tot1 == parked,
		       "per-colour free_pages sum (%lld) equals the parked counter (%llu)",
		       tot1, parked);
	}
	/* Draining gives the parked pages back: MemFree grows by what they held. */
	ok = pagecolor_drain() == 0;
	pc_settle();
	free2 = pc_memfree_pages();
	tot2 = pc_free_total(after, PAGE_COLOR_MAX_COLORS);
	for (c = 0; c < pc_nr_colors; c++)
		if (after[c] > (unsigned long)worst_diff) {
			worst_diff = (long long)after[c];
			worst = c;
		}
	tap_diag("after drain: MemFree %lld pages, parked %lld (largest colour %d: %lld)",
		 free2, tot2, worst, worst_diff);
	tap_ok(ok && tot2 == 0 && free2 >= free1 + tot1 - tol && free2 <= free1 + tot1 + tol,
	       "drain: every per-colour count back to 0, MemFree grown by the %lld pages "
	       "they held (within %lld)", tot1, tol);
	return tap_finish();
}
