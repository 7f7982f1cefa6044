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
 * fills ZONE_NORMAL to its high watermark and ZONE_DMA32 to a few
 * thousand pages above low + protection with its own anonymous pages
 * (no swap: nothing is reclaimable, so kswapd cannot move the numbers),
 * and protects itself from the OOM killer.  Then a child bound to every
 * colour (so that every free frame is one it may take) touches what the
 * zones may give an allocation whose highest zone is ZONE_NORMAL or
 * above (free - min in ZONE_NORMAL, free - min - protection in
 * ZONE_DMA32) plus half the protection.  The parent samples the zones
 * every 10 ms and once more when the child has touched everything: the
 * lowest margin of ZONE_DMA32 over min + protection, less per-CPU counter
 * drift, must not be negative.  An allocator that honours the reserve
 * cannot give the child its last pages: the child is OOM-killed (its
 * oom_score_adj is 1000) after it got at least 9/10 of what the zones may
 * give; one that checks only the min watermark gives it all of them, from
 * ZONE_DMA32's reserve.
 */
#include "pc_test.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define CHUNK_PAGES	4096	/* the fill touches at most this many between looks */
#define DRIFT		256	/* pages: per-CPU vmstat deltas not folded yet */
#define SLACK		2048	/* ZONE_DMA32 pages left over low + protection */

struct zone_info {
	long long free, min, low, high, protection;
	int found;
};

/*
 * /proc/zoneinfo for node 0's zone @name; protection is the largest of the
 * zone's lowmem reserves, the one against the highest zone's allocations.
 */
static int zone_info(const char *name, struct zone_info *zi)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	char line[512], zname[32];
	int in = 0, node;

	memset(zi, 0, sizeof(*zi));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		long long a;
		char *s;

		if (sscanf(line, "Node %d, zone %31s", &node, zname) == 2) {
			in = node == 0 && !strcmp(zname, name);
			zi->found |= in;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, " pages free %lld", &a) == 1)
			zi->free = a;
		else if (sscanf(line, " min %lld", &a) == 1)
			zi->min = a;
		else if (sscanf(line, " low %lld", &a) == 1)
			zi->low = a;
		else if (sscanf(line, " high %lld", &a) == 1)
			zi->high = a;
		else if ((s = strstr(line, "protection: (")))
			for (s += strlen("protection: ("); *s && *s != ')'; s++)
				if (sscanf(s, "%lld", &a) == 1) {
					if (a > zi->protection)
						zi->protection = a;
					s += strcspn(s, ",)") - 1;
				}
	}
	fclose(f);
	return zi->found ? 0 : -1;
}

/* ZONE_DMA32's free pages over min + protection. */
static long long dma32_margin(const struct zone_info *d)
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
	struct zone_info normal, dma32, d;
	long long cap_normal, cap_dma32, lowest;
	size_t max_pages, n = 0, want;
	volatile size_t *done;
	int premise, st = -1, samples = 0, pfd[2], finished = 0;
	char *p;
	pid_t pid;

	pc_init(5);
	if (zone_info("Normal", &normal) || zone_info("DMA32", &dma32)) {
		tap_diag("no ZONE_NORMAL (a guest over 4 GiB is needed) or no ZONE_DMA32");
		return tap_finish();
	}
	premise = dma32.protection >= 4 * DRIFT;
	tap_ok(premise, "ZONE_DMA32 keeps %lld pages from ZONE_NORMAL allocations "
	       "(at least %d; min %lld, low %lld, %lld free)", dma32.protection, 4 * DRIFT,
	       dma32.min, dma32.low, dma32.free);
	if (!premise)
		return tap_finish();

	/* the parent keeps its pages; the OOM killer takes the child */
	pc_write_file("/proc/self/oom_score_adj", "-1000");
	pc_wait_parked(1, 10000);
	max_pages = (size_t)(normal.free + dma32.free);
	p = mmap(NULL, max_pages * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	done = mmap(NULL, sizeof(*done), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || done == MAP_FAILED || pipe(pfd)) {
		tap_diag("mmap/pipe failed: %s", strerror(errno));
		return tap_finish();
	}
	*done = 0;
	madvise(p, max_pages * pc_page_size, MADV_NOHUGEPAGE);
	madvise(p, max_pages * pc_page_size, MADV_DONTFORK);
	/* ZONE_NORMAL to its high watermark, then ZONE_DMA32 to low + protection + SLACK */
	for (;;) {
		long long room;
		size_t step;

		zone_info("Normal", &normal);
		zone_info("DMA32", &dma32);
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
	pc_wait_parked(1, 10000);
	zone_info("Normal", &normal);
	zone_info("DMA32", &dma32);
	cap_normal = normal.free > normal.min ? normal.free - normal.min : 0;
	cap_dma32 = dma32_margin(&dma32) > 0 ? dma32_margin(&dma32) : 0;
	want = (size_t)(cap_normal + cap_dma32 + dma32.protection / 2);
	tap_diag("filled %zu pages; ZONE_NORMAL %lld free (min %lld, high %lld); ZONE_DMA32 "
		 "%lld free (min %lld, low %lld, protection %lld, margin %lld)", n, normal.free,
		 normal.min, normal.high, dma32.free, dma32.min, dma32.low, dma32.protection,
		 dma32_margin(&dma32));
	tap_ok(dma32_margin(&dma32) >= -DRIFT &&
	       dma32_margin(&dma32) <= dma32.low - dma32.min + 2 * SLACK,
	       "the fill left ZONE_DMA32 just above min + protection (margin %lld, at most %lld)",
	       dma32_margin(&dma32), dma32.low - dma32.min + 2 * SLACK);

	lowest = dma32_margin(&dma32);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		child(want, done, pfd[1]);
	}
	close(pfd[1]);
	while (pid > 0) {
		struct pollfd pf = { .fd = pfd[0], .events = POLLIN };
		int r = poll(&pf, 1, 10);

		if (!zone_info("DMA32", &d)) {
			samples++;
			if (dma32_margin(&d) < lowest)
				lowest = dma32_margin(&d);
		}
		if (r > 0) {
			char c;

			finished = read(pfd[0], &c, 1) == 1;
			kill(pid, SIGKILL);
		}
		if (waitpid(pid, &st, WNOHANG) != 0)
			break;
	}
	tap_diag("child asked for %zu pages (ZONE_NORMAL may give %lld, ZONE_DMA32 %lld, "
		 "+ %lld): touched %zu, %s; lowest ZONE_DMA32 margin %lld (%d samples)", want,
		 cap_normal, cap_dma32, dma32.protection / 2, *done,
		 finished ? "all of them" : "then killed", lowest, samples);
	tap_ok(*done >= (size_t)(cap_normal + cap_dma32) * 9 / 10,
	       "the child got at least 9/10 of what the zones may give (%zu of %lld)", *done,
	       cap_normal + cap_dma32);
	tap_ok(samples > 0 && lowest >= -DRIFT,
	       "ZONE_DMA32 never went below min + protection (lowest margin %lld, at most %d "
	       "under allowed)", lowest, DRIFT);
	munmap(p, max_pages * pc_page_size);
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
