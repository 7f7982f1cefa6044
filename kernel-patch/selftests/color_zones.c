// SPDX-License-Identifier: GPL-2.0
/*
 * Above 4 GiB (issue 29 item 6): a bind policy must find the free frames
 * of its colour in ZONE_NORMAL wherever they are, not only in the first
 * 4,096 frames of the colour that a frame walk looks at in one go.
 *
 * Run in a guest with more than 4 GiB (the fourth boot of `make test`:
 * 7 GiB, page_colors=16, so that a walk of 4,096 frames of one colour,
 * 256 MiB, covers only part of ZONE_NORMAL).  The test
 *
 *  - makes ZONE_DMA32 unusable for user pages (vm.lowmem_reserve_ratio
 *    1 for it: its protection against ZONE_NORMAL allocations exceeds its
 *    free memory), so that the page allocator, the colour refills
 *    included, can take user pages from ZONE_NORMAL only;
 *  - lowers the watermarks (vm.min_free_kbytes 4096,
 *    vm.watermark_scale_factor 1) and fills ZONE_NORMAL with its own
 *    anonymous pages down to the zone's high watermark (no reclaim, no
 *    kswapd), reading their frames from pagemap: what is left free gives
 *    the colour refills about 100 blocks, a page of colour 0 each;
 *  - frees 2,048 of its frames of colour 0 that lie past the first two
 *    windows of the colour in ZONE_NORMAL (each alone: its neighbours
 *    stay in use, so no free block holds every colour), then 32,768 frames
 *    of colour 2 (alone too), which come first on the order-0 free list,
 *    so that the allocator's bounded scan of the free lists does not
 *    reach the colour-0 ones;
 *  - has a child bound to colour 0 touch 1,024 pages.
 *
 * The child must get them all without SIGBUS, every page of colour 0 and
 * in ZONE_NORMAL (ZONE_DMA32 is full of free frames of colour 0, but the
 * allocator is not to take them while ZONE_NORMAL has some), with no
 * direct reclaim or compaction (vmstat allocstall_*, compact_stall), no
 * colour reclaim ("reclaimed"), no bind failure ("failures"), no OOM kill.
 * A frame walk that starts ZONE_NORMAL over at its first window after
 * each walk of ZONE_DMA32 never sees the freed frames: the child's pages
 * come from ZONE_DMA32.
 */
#include "pc_test.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define FRAME_WINDOW	4096	/* frames of a colour one walk looks at */
#define NR_TARGETS	2048	/* colour-0 frames freed past two windows */
#define NR_FILLERS	32768	/* colour-2 frames freed after them */
#define WANT_PAGES	1024	/* the child touches this many of colour 0 */
#define CHUNK_PAGES	4096	/* the fill touches this many between looks */

/* sysctls set for the test and put back: path, value, saved value */
static struct {
	const char *path;
	char value[128], old[128];
} knobs[] = {
	{ .path = "/proc/sys/vm/lowmem_reserve_ratio" },
	{ .path = "/proc/sys/vm/min_free_kbytes", .value = "4096" },
	{ .path = "/proc/sys/vm/watermark_scale_factor", .value = "1" },
};
#define NR_KNOBS	(int)(sizeof(knobs) / sizeof(knobs[0]))

/* Set the knobs (the ratio of the lowest zone to 1): 0, or -1 on error. */
static int knobs_set(void)
{
	int k, ret = 0;

	for (k = 0; k < NR_KNOBS; k++) {
		FILE *f = fopen(knobs[k].path, "r");

		if (!f || !fgets(knobs[k].old, sizeof(knobs[k].old), f)) {
			tap_diag("%s: %s", knobs[k].path, strerror(errno));
			knobs[k].old[0] = 0;
			ret = -1;
		}
		if (f)
			fclose(f);
		knobs[k].old[strcspn(knobs[k].old, "\n")] = 0;
		if (k == 0) {
			char rest[100];

			snprintf(rest, sizeof(rest), "%s",
				 knobs[k].old + strcspn(knobs[k].old, " \t"));
			snprintf(knobs[k].value, sizeof(knobs[k].value), "1%s", rest);
		}
		if (knobs[k].old[0] && pc_write_file(knobs[k].path, knobs[k].value)) {
			tap_diag("%s: %s", knobs[k].path, strerror(errno));
			ret = -1;
		}
	}
	return ret;
}

static void knobs_restore(void)
{
	int k;

	for (k = NR_KNOBS - 1; k >= 0; k--)
		if (knobs[k].old[0])
			pc_write_file(knobs[k].path, knobs[k].old);
}

/* A /proc/vmstat counter, or the sum of those starting with @prefix. */
static long long vmstat_sum(const char *prefix)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char name[128];
	long long v, sum = 0;

	if (!f)
		return -1;
	while (fscanf(f, "%127s %lld", name, &v) == 2)
		if (!strncmp(name, prefix, strlen(prefix)))
			sum += v;
	fclose(f);
	return sum;
}

struct counters {
	unsigned long long reclaimed, failures, refills;
	long long allocstall, compact_stall;
	int kills;
};

static void counters_read(struct counters *c)
{
	pagecolor_read_counter("reclaimed", &c->reclaimed);
	pagecolor_read_counter("failures", &c->failures);
	pagecolor_read_counter("refills", &c->refills);
	c->allocstall = vmstat_sum("allocstall_");
	c->compact_stall = vmstat_sum("compact_stall");
	c->kills = pc_dmesg_find("Out of memory: Killed process", NULL, 0);
}

/* Child: bind WANT_PAGES pages to colour 0, touch them, write their pfns. */
static void child(uint64_t *out)
{
	pagecolor_set_t s = pc_set("0");
	size_t len = WANT_PAGES * pc_page_size;
	char *q;

	q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q == MAP_FAILED || pagecolor_mbind(q, len, COLOR_MODE_BIND, &s, 0))
		_exit(20);
	pc_touch(q, WANT_PAGES);
	if (pagecolor_pfns(q, WANT_PAGES, out))
		_exit(21);
	_exit(0);
}

int main(void)
{
	struct pc_zone_info normal, dma32;
	struct counters c0, c1;
	size_t max_pages, n = 0, i, targets = 0, fillers = 0, in_normal = 0;
	size_t of_color = 0, past = 0;
	uint64_t *pfns, *got, past_pfn;
	char *p;
	int st = -1, premise;
	pid_t pid;

	pc_init(7);
	if (pc_zone_info("Normal", &normal) || pc_zone_info("DMA32", &dma32)) {
		tap_diag("no ZONE_NORMAL (a guest over 4 GiB is needed) or no ZONE_DMA32");
		return tap_finish();
	}
	/* the first two windows of colour 0 in ZONE_NORMAL, in frames */
	past_pfn = normal.start_pfn + 2ULL * FRAME_WINDOW * pc_nr_colors;
	premise = pc_nr_colors <= 64 &&
		  past_pfn + 4ULL * NR_TARGETS * pc_nr_colors <
		  (uint64_t)(normal.start_pfn + normal.spanned);
	tap_ok(premise, "ZONE_NORMAL (pfn %lld, %lld pages) holds colour 0 well past "
	       "two windows of %d frames (%d colours; from pfn %llu)", normal.start_pfn,
	       normal.spanned, FRAME_WINDOW, pc_nr_colors, (unsigned long long)past_pfn);
	if (!premise)
		return tap_finish();

	/* ZONE_DMA32 out of reach of user pages, low watermarks */
	premise = knobs_set() == 0;
	pagecolor_drain();
	pc_zone_info("DMA32", &dma32);
	tap_ok(premise && dma32.protection > dma32.free,
	       "ZONE_DMA32 reserved against ZONE_NORMAL allocations (ratio %s: protection "
	       "%lld > %lld free pages)", knobs[0].value, dma32.protection, dma32.free);

	/* fill ZONE_NORMAL down to its high watermark */
	max_pages = (size_t)normal.spanned;
	p = mmap(NULL, max_pages * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	pfns = calloc(max_pages, sizeof(*pfns));
	got = mmap(NULL, WANT_PAGES * sizeof(*got), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || !pfns || got == MAP_FAILED) {
		tap_diag("mmap/calloc failed: %s", strerror(errno));
		knobs_restore();
		return tap_finish();
	}
	/* the pfn array is touched now: after the fill there is no room */
	memset(pfns, 0, max_pages * sizeof(*pfns));
	memset(got, 0, WANT_PAGES * sizeof(*got));
	/* 4 KiB pages, and not copied into the child */
	madvise(p, max_pages * pc_page_size, MADV_NOHUGEPAGE);
	madvise(p, max_pages * pc_page_size, MADV_DONTFORK);
	for (;;) {
		size_t step;

		pc_zone_info("Normal", &normal);
		if (normal.free < normal.high + 2048)
			break;
		step = (size_t)(normal.free - normal.high) / 2;
		if (step > CHUNK_PAGES)
			step = CHUNK_PAGES;
		if (n + step > max_pages)
			break;
		pc_touch(p + n * pc_page_size, step);
		n += step;
	}
	if (pagecolor_pfns(p, n, pfns)) {
		tap_diag("pagemap: %s", strerror(errno));
		knobs_restore();
		return tap_finish();
	}
	/* colour-0 frames past the two windows first, then colour-2 ones */
	for (i = 0; i < n && targets < NR_TARGETS; i++)
		if (pfns[i] >= past_pfn && pagecolor_pfn_color(pfns[i], pc_nr_colors) == 0 &&
		    !madvise(p + i * pc_page_size, pc_page_size, MADV_DONTNEED))
			targets++;
	for (i = 0; i < n && fillers < NR_FILLERS; i++)
		if (pfns[i] >= (uint64_t)normal.start_pfn &&
		    pagecolor_pfn_color(pfns[i], pc_nr_colors) == 2 &&
		    !madvise(p + i * pc_page_size, pc_page_size, MADV_DONTNEED))
			fillers++;
	pc_zone_info("Normal", &normal);
	tap_diag("filled %zu pages; ZONE_NORMAL: %lld free, watermarks %lld/%lld/%lld; "
		 "ZONE_DMA32: %lld free", n, normal.free, normal.min, normal.low,
		 normal.high, dma32.free);
	tap_ok(targets == NR_TARGETS && fillers == NR_FILLERS,
	       "freed %zu frames of colour 0 past pfn %llu and then %zu of colour 2",
	       targets, (unsigned long long)past_pfn, fillers);

	counters_read(&c0);
	pid = fork();
	if (pid == 0)
		child(got);
	if (pid > 0)
		waitpid(pid, &st, 0);
	counters_read(&c1);
	for (i = 0; i < WANT_PAGES && st == 0; i++) {
		if (got[i] >= (uint64_t)normal.start_pfn)
			in_normal++;
		if (got[i] >= past_pfn)
			past++;
		if (got[i] && pagecolor_pfn_color(got[i], pc_nr_colors) == 0)
			of_color++;
	}
	tap_diag("child: %zu pages of colour 0, %zu in ZONE_NORMAL, %zu past pfn %llu; "
		 "refills %llu -> %llu", of_color, in_normal, past,
		 (unsigned long long)past_pfn, c0.refills, c1.refills);
	tap_ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "the child bound to colour 0 got its %d pages (status 0x%x%s)", WANT_PAGES,
	       st, WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS ? ": SIGBUS" : "");
	tap_ok(of_color == WANT_PAGES && in_normal == WANT_PAGES,
	       "every page of colour 0 and in ZONE_NORMAL (%zu and %zu of %d)", of_color,
	       in_normal, WANT_PAGES);
	tap_ok(c1.reclaimed == c0.reclaimed && c1.failures == c0.failures &&
	       c1.allocstall == c0.allocstall && c1.compact_stall == c0.compact_stall &&
	       c1.kills == c0.kills,
	       "no reclaim, compaction, bind failure or OOM kill (reclaimed +%llu, "
	       "failures +%llu, allocstall +%lld, compact_stall +%lld, OOM kills +%d)",
	       c1.reclaimed - c0.reclaimed, c1.failures - c0.failures,
	       c1.allocstall - c0.allocstall, c1.compact_stall - c0.compact_stall,
	       c1.kills - c0.kills);

	munmap(p, max_pages * pc_page_size);
	knobs_restore();
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
