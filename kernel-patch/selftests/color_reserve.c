// SPDX-License-Identifier: GPL-2.0
/*
 * A coloured allocation honours the lowmem reserve (issue 29 item 5).
 *
 * ZONE_DMA32 keeps lowmem_reserve[ZONE_NORMAL] pages ("protection" in
 * /proc/zoneinfo) from allocations that could have used ZONE_NORMAL: the
 * page allocator takes a page there only while the zone's free pages
 * stay above its watermark plus that reserve.  The colour allocator's
 * refills go through the page allocator and honour it; the one path that
 * takes free pages itself is take_free_page_color() (the free-list scan
 * and the frame walk of color_search()), which must check it too.
 *
 * Run in a guest over 4 GiB (the fourth boot of `make test`).  The test
 * fills ZONE_NORMAL to its high watermark and ZONE_DMA32 to its low
 * watermark with its own anonymous pages (no swap: nothing is
 * reclaimable, so kswapd cannot move the numbers), the reserve switched
 * off meanwhile (vm.lowmem_reserve_ratio), so that the fill takes
 * ZONE_DMA32's large blocks; frees protection + 1,024 single frames of
 * ZONE_DMA32 (odd pfns, their buddies stay in use, per-CPU lists kept
 * short by vm.percpu_pagelist_high_fraction), since take_free_page_color()
 * takes only blocks smaller than a pageblock; and puts the reserve back.
 * Then a child bound to every colour (so that every free frame is one it
 * may take) touches what the zones may give an allocation whose highest
 * zone is ZONE_NORMAL or above (free - min in ZONE_NORMAL, free - min -
 * protection in ZONE_DMA32) plus 3/4 of the protection.  The parent
 * samples the zones every 10 ms and once more if the child touched
 * everything: the lowest margin of ZONE_DMA32 over min + protection, less
 * per-CPU counter drift, must not be negative.  An allocator that honours
 * the reserve cannot give the child its last pages: the child is
 * OOM-killed (its oom_score_adj of 1000 puts it before the parent, whose
 * fill is larger) after it got at least 9/10 of what the zones may give.
 * One that checks only the min watermark (the series before issue 29
 * item 5) takes the single frames below min + protection.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define CHUNK_PAGES	4096	/* the fill touches at most this many between looks */
#define DRIFT		128	/* pages: vmstat deltas not folded, the OOM victim's reserve access */
#define SLACK		512	/* ZONE_DMA32 pages the fill leaves over low */
#define RATIO_KNOB	"/proc/sys/vm/lowmem_reserve_ratio"

#define PCP_KNOB	"/proc/sys/vm/percpu_pagelist_high_fraction"
static char pcp_old[32], ratio_old[128];

/* The two knobs as they were, however the test ends (the child _exit()s). */
static void restore_knobs(void)
{
	if (ratio_old[0])
		pc_write_file(RATIO_KNOB, ratio_old);
	if (pcp_old[0])
		pc_write_file(PCP_KNOB, pcp_old);
}

/* The first line of @path, without its newline, in @buf: 0, or -1. */
static int fgets_file(const char *path, char *buf, int len)
{
	FILE *f = fopen(path, "r");
	int ret = f && fgets(buf, len, f) ? 0 : -1;

	if (f)
		fclose(f);
	buf[ret ? 0 : strcspn(buf, "\n")] = 0;
	return ret;
}

/* ZONE_DMA32's free pages over min + protection. */
static long long dma32_margin(const struct pc_zone_info *d)
{
	return d->free - (d->min + d->protection);
}

/* Child: bound to every colour, touch @n pages, counting them in *@done. */
static void child(size_t n, volatile size_t *done, int fd)
{
	pagecolor_set_t s;
	char spec[32], *q;
	size_t i;

	snprintf(spec, sizeof(spec), "0-%d", pc_nr_colors - 1);
	s = pc_set(spec);
	pc_write_file("/proc/self/oom_score_adj", "1000");
	q = mmap(NULL, n * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (q == MAP_FAILED || pagecolor_mbind(q, n * pc_page_size, COLOR_MODE_BIND, &s, 0))
		_exit(20);
	madvise(q, n * pc_page_size, MADV_NOHUGEPAGE);
	/*
	 * Page tables first, while memory is plentiful: a page table
	 * allocated in the band (GFP_KERNEL honours the reserve) would end
	 * the child by an OOM kill before the walk has gone far below it.
	 */
	for (i = 0; i < n; i += 512)
		q[i * pc_page_size] = 1;
	for (i = 0; i < n; i++) {
		q[i * pc_page_size] = 1;
		*done = i + 1;
	}
	if (write(fd, "x", 1) != 1)
		_exit(21);
	pause();
	_exit(0);
}

int main(void)
{
	struct pc_zone_info normal, dma32, d;
	long long cap_normal, cap_dma32, lowest, lowest_normal, prot;
	size_t max_pages, n = 0, want, i, singles = 0;
	uint64_t *pfns, dma32_end;
	volatile size_t *done;
	int premise, st = -1, samples = 0, pfd[2], finished = 0;
	char *p;
	pid_t pid;

	pc_init(5);
	if (pc_zone_info("Normal", &normal) || pc_zone_info("DMA32", &dma32)) {
		tap_diag("no ZONE_NORMAL (a guest over 4 GiB is needed) or no ZONE_DMA32");
		return tap_finish();
	}
	premise = dma32.protection >= 4 * DRIFT;
	tap_ok(premise, "ZONE_DMA32 keeps %lld pages from ZONE_NORMAL allocations "
	       "(at least %d; min %lld, low %lld, %lld free)", dma32.protection, 4 * DRIFT,
	       dma32.min, dma32.low, dma32.free);
	if (!premise)
		return tap_finish();

	/*
	 * Short per-CPU free lists (4 batches a CPU), so that the frames freed
	 * below reach the buddy lists, where the zone counts them free.
	 */
	atexit(restore_knobs);
	if (!fgets_file(PCP_KNOB, pcp_old, sizeof(pcp_old)) && pc_write_file(PCP_KNOB, "1000000"))
		tap_diag("%s: %s", PCP_KNOB, strerror(errno));
	/*
	 * No reserve while the fill runs (the first zone's ratio so high
	 * that its protection is 0), so that the fill takes ZONE_DMA32's
	 * large blocks down to its low watermark; the reserve is put back
	 * once single frames hold what is free above min.
	 */
	prot = dma32.protection;
	if (!fgets_file(RATIO_KNOB, ratio_old, sizeof(ratio_old))) {
		char v[160];

		snprintf(v, sizeof(v), "1000000000%s", ratio_old + strcspn(ratio_old, " \t"));
		if (pc_write_file(RATIO_KNOB, v))
			tap_diag("%s: %s", RATIO_KNOB, strerror(errno));
	}
	pc_wait_parked(1, 10000);
	/* room for what reclaim frees while the fill runs (page cache) */
	max_pages = (size_t)(normal.free + dma32.free) * 5 / 4;
	p = mmap(NULL, max_pages * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	done = mmap(NULL, sizeof(*done), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pfns = calloc(max_pages, sizeof(*pfns));
	if (p == MAP_FAILED || done == MAP_FAILED || !pfns || pipe(pfd)) {
		tap_diag("mmap/calloc/pipe failed: %s", strerror(errno));
		return tap_finish();
	}
	/* touched now: after the fill there is no room */
	memset(pfns, 0, max_pages * sizeof(*pfns));
	*done = 0;
	madvise(p, max_pages * pc_page_size, MADV_NOHUGEPAGE);
	madvise(p, max_pages * pc_page_size, MADV_DONTFORK);
	/* ZONE_NORMAL to its high watermark, then ZONE_DMA32 to low + SLACK */
	for (;;) {
		long long room;
		size_t step;

		pc_zone_info("Normal", &normal);
		pc_zone_info("DMA32", &dma32);
		room = normal.free - normal.high - 1024;
		if (room < 1024)
			room = dma32.free - (dma32.low + dma32.protection + SLACK);
		if (room < 256)
			break;
		step = (size_t)room / 2 + 1;
		if (step > CHUNK_PAGES)
			step = CHUNK_PAGES;
		if (n + step > max_pages)
			break;
		pc_touch(p + n * pc_page_size, step);
		n += step;
	}
	/*
	 * Free pages over min + protection in blocks smaller than a
	 * pageblock, the only ones take_free_page_color() takes: single
	 * frames of ZONE_DMA32 at odd pfns, whose buddies stay in use.
	 */
	dma32_end = (uint64_t)(dma32.start_pfn + dma32.spanned);
	if (pagecolor_pfns(p, n, pfns))
		tap_diag("pagemap: %s", strerror(errno));
	for (i = n; i-- > 0 && singles < (size_t)prot + 1024;)
		if (pfns[i] && pfns[i] < dma32_end && (pfns[i] & 1) &&
		    !madvise(p + i * pc_page_size, pc_page_size, MADV_DONTNEED))
			singles++;
	if (ratio_old[0])
		pc_write_file(RATIO_KNOB, ratio_old);
	pc_wait_parked(1, 10000);
	pc_zone_info("Normal", &normal);
	pc_zone_info("DMA32", &dma32);
	cap_normal = normal.free > normal.min ? normal.free - normal.min : 0;
	cap_dma32 = dma32_margin(&dma32) > 0 ? dma32_margin(&dma32) : 0;
	want = (size_t)(cap_normal + cap_dma32 + dma32.protection * 3 / 4);
	tap_diag("filled %zu pages, freed %zu single frames of ZONE_DMA32; ZONE_NORMAL %lld free (min %lld, high %lld); ZONE_DMA32 "
		 "%lld free (min %lld, low %lld, protection %lld, margin %lld)", n, singles, normal.free,
		 normal.min, normal.high, dma32.free, dma32.min, dma32.low, dma32.protection,
		 dma32_margin(&dma32));
	tap_ok(singles == (size_t)prot + 1024 && dma32.protection == prot && dma32_margin(&dma32) >= -DRIFT &&
	       dma32_margin(&dma32) <= dma32.low - dma32.min + 2 * SLACK + (long long)singles,
	       "the fill left ZONE_DMA32 just above min + protection, %zu single frames free "
	       "(margin %lld, at most %lld)", singles, dma32_margin(&dma32),
	       dma32.low - dma32.min + 2 * SLACK + (long long)singles);

	lowest = dma32_margin(&dma32);
	lowest_normal = normal.free - normal.min;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		child(want, done, pfd[1]);
	}
	close(pfd[1]);
	while (pid > 0) {
		struct pollfd pf = { .fd = pfd[0], .events = POLLIN };
		int r = poll(&pf, 1, 10);

		if (!pc_zone_info("DMA32", &d)) {
			samples++;
			if (dma32_margin(&d) < lowest)
				lowest = dma32_margin(&d);
		}
		if (!pc_zone_info("Normal", &d) && d.free - d.min < lowest_normal)
			lowest_normal = d.free - d.min;
		if (r > 0) {
			char c;

			finished = read(pfd[0], &c, 1) == 1;
			kill(pid, SIGKILL);
		}
		if (waitpid(pid, &st, WNOHANG) != 0)
			break;
	}
	munmap(p, max_pages * pc_page_size);
	tap_diag("child asked for %zu pages (ZONE_NORMAL may give %lld, ZONE_DMA32 %lld, "
		 "+ %lld): touched %zu, %s (status %#x); lowest ZONE_DMA32 margin %lld, "
		 "ZONE_NORMAL free - min %lld (%d samples)", want, cap_normal, cap_dma32,
		 dma32.protection * 3 / 4, *done, finished ? "all of them" : "then died", st,
		 lowest, lowest_normal, samples);
	tap_ok(*done >= (size_t)(cap_normal + cap_dma32) * 9 / 10,
	       "the child got at least 9/10 of what the zones may give (%zu of %lld)", *done,
	       cap_normal + cap_dma32);
	tap_ok(samples > 0 && lowest >= -DRIFT,
	       "ZONE_DMA32 never went below min + protection (lowest margin %lld, at most %d "
	       "under allowed)", lowest, DRIFT);
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
