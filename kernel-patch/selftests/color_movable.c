// SPDX-License-Identifier: GPL-2.0
/*
 * A movable page of a colour comes from a movable pageblock while one
 * holds a free frame of the colour (issue 29 item 5).
 *
 * When no free block of a refill's size is left, take_free_page_color()
 * takes a free frame of an allowed colour out of a smaller block: from the
 * free lists first (the allocation's migratetype, then fallbacks[]; at most
 * 512 blocks of a list and 4,096 in all), then by walking the colour's
 * frames.  The walk of the series before f31e7e6 took the first free frame
 * it met, in a pageblock of any type; a movable page in an unmovable
 * pageblock is the mixing anti-fragmentation avoids, and a coloured page is
 * never compacted out of it.  The fixed walk ends at a frame of the
 * allocation's migratetype and takes another type's only when its window
 * holds none.
 *
 * Run with page_owner=on (the only place user space sees a pageblock's
 * type) and 256 colours.  The test:
 *  1. makes unmovable pageblocks with free frames whose buddies stay in
 *     use: page tables for NR_TABLES 2 MiB regions (a read fault maps the
 *     zero page, so only the page table is allocated), every other region
 *     unmapped again;
 *  2. fills memory with anonymous pages, mlocked (compaction of
 *     unevictable pages off); reads each frame's pageblock type from
 *     page_owner and picks the colour c with most single free frames in
 *     unmovable pageblocks (U: free ones, and the fill's, given back);
 *  3. gives back, first, the fill's frames of U and NR_MOVABLE of its
 *     frames of c in movable pageblocks, the first after U in frame order
 *     (M); then the rest of the fill but c and its buddy colour c ^ 1, so
 *     that no free block is a refill's size and the free lists hold blocks
 *     ahead of M: blocks of orders 1-7, and in one 256-frame block in
 *     HOLES_EVERY single pages in the top quarter without c (every other
 *     one kept);
 *  4. forks a child bound to c that touches NR_CHILD pages, and one more
 *     for each free block of 256 frames left: a refill splits such a block
 *     before any search, in any pageblock, as a fallback would (frames
 *     freed after page_owner was read may make some).
 * The free-list scans spend their 4,096 blocks on the movable lists ahead
 * of M, so the walk picks each of the child's pages that no refill gave:
 * none may be one of U in a pageblock still unmovable.  A refill that takes
 * a block of an unmovable pageblock claims the pageblock for movable pages
 * (it is half of it), which is how its page is told apart; the walk never
 * changes a pageblock's type.
 */
#include "pc_test.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>

#define ZONE		"DMA32"
#define PAGE_OWNER	"/sys/kernel/debug/page_owner"
#define UNEVICTABLE	"/proc/sys/vm/compact_unevictable_allowed"
#define PROACTIVE	"/proc/sys/vm/compaction_proactiveness"
#define DROP_CACHES	"/proc/sys/vm/drop_caches"
#define NR_TABLES	16384	/* page tables made, half freed again */
#define TABLE_SPAN	(2UL << 20)	/* what one page table maps */
#define NR_MOVABLE	12	/* frames of c given back in movable pageblocks */
#define NR_CHILD	8	/* pages the child touches, besides refills */
#define MAX_REFILLS	56	/* refills the child makes room for */
#define LIST_SCAN	512	/* take_free_page_color(): blocks of one list */
#define SCAN_LIMIT	4096	/* and in all */
#define CHUNK		256	/* pages the fill touches between two looks */
#define FLOOR_MARGIN	1536	/* the fill stops this far above min */
#define HOLES_EVERY	4	/* 256-frame blocks with single free pages */
#define PLAN		4

/* What step 3 does with a frame the fill holds. */
enum fate { KEEP, FIRST, THEN };

static int pb_order;
static unsigned long long zone_start, zone_end;
static unsigned char *used;	/* frames an allocation holds (page_owner) */
static char *types;		/* pageblock types (page_owner) */
static unsigned int table_sum;	/* what make_tables() read, so that it reads */
static uint32_t *fill_index;	/* 1 + the fill's page at a frame, 0: none */

/*
 * A frame of an unmovable or reclaimable pageblock that will be free as a
 * single page: free now (@free_head: it heads a free block) or the
 * fill's, and its buddy in use.
 */
static int is_u(uint64_t f, int free_head)
{
	char t = types[f >> pb_order];

	if ((t != 'U' && t != 'R') || (f ^ 1) < zone_start || (f ^ 1) >= zone_end ||
	    !used[(f ^ 1) - zone_start])
		return 0;
	return free_head || fill_index[f - zone_start];
}

/*
 * Step 1: NR_TABLES page tables, allocated one after another, then every
 * other one freed by unmapping its region.  Returns the mapping.
 */
static char *make_tables(void)
{
	size_t len = NR_TABLES * TABLE_SPAN, i;
	char *p;

	p = mmap(NULL, len + TABLE_SPAN, PROT_READ,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* one table per region: align the regions to what a table maps */
	p = (char *)(((uintptr_t)p + TABLE_SPAN - 1) & ~(TABLE_SPAN - 1));
	madvise(p, len, MADV_NOHUGEPAGE);	/* no huge zero page */
	for (i = 0; i < NR_TABLES; i++)
		table_sum += p[i * TABLE_SPAN];	/* a read: the zero page */
	for (i = 1; i < NR_TABLES; i += 2)
		munmap(p + i * TABLE_SPAN, TABLE_SPAN);
	return p;
}

/* Touch anonymous pages until ZONE's free pages are min + FLOOR_MARGIN. */
static char *fill(size_t *touched, size_t len)
{
	struct pc_zone_info zi;
	char *p;

	*touched = 0;
	p = mmap(NULL, len * pc_page_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len * pc_page_size, MADV_NOHUGEPAGE);
	/*
	 * As an allocation sees free memory: less the highatomic reserve's
	 * pageblocks, which the watermark check subtracts whole
	 */
	while (*touched + CHUNK <= len && !pc_zone_info(ZONE, &zi) &&
	       zi.free - ((long long)pc_pagetype_blocks(ZONE, "HighAtomic") << pb_order) >
	       zi.min + zi.protection + FLOOR_MARGIN) {
		pc_touch(p + *touched * pc_page_size, CHUNK);
		*touched += CHUNK;
	}
	tap_diag("filled: zone free %lld, min %lld, protection %lld, %d highatomic pageblocks",
		 zi.free, zi.min, zi.protection, pc_pagetype_blocks(ZONE, "HighAtomic"));
	if (mlock(p, *touched * pc_page_size))
		tap_diag("mlock: %s", strerror(errno));
	return p;
}

/* Mark in @head the frames of [zone_start, zone_end) that head a free buddy block. */
static int buddy_heads(unsigned char *head)
{
	int fd = open("/proc/kpageflags", O_RDONLY);
	unsigned long long pfn;
	uint64_t flags[512];

	if (fd < 0)
		return -1;
	for (pfn = zone_start; pfn < zone_end; pfn += 512) {
		ssize_t n = pread(fd, flags, sizeof(flags), (off_t)(pfn * sizeof(uint64_t)));
		int i;

		for (i = 0; i < n / (ssize_t)sizeof(uint64_t) && pfn + i < zone_end; i++)
			head[pfn + i - zone_start] = !!(flags[i] & (1ULL << KPF_BUDDY));
	}
	close(fd);
	return 0;
}

/* Unmap the fill's pages of fate @which, run by run. */
static size_t give_back(char *p, const unsigned char *fate, size_t n, int which)
{
	size_t i, run = 0, pages = 0;

	for (i = 0; i <= n; i++) {
		if (i < n && fate[i] == which) {
			run++;
			continue;
		}
		if (run)
			munmap(p + (i - run) * pc_page_size, run * pc_page_size);
		pages += run;
		run = 0;
	}
	return pages;
}

/* Free blocks of exactly @order in ZONE's pageblocks of migratetype @type. */
static long long free_blocks_of_order(const char *type, int order)
{
	return pc_pagetype_free(ZONE, type, order) - 2 * pc_pagetype_free(ZONE, type, order + 1);
}

int main(void)
{
	static size_t in_unmovable[PAGE_COLOR_MAX_COLORS];
	char unevictable[32] = "1", proactive[32] = "20";
	size_t touched = 0, i, n_u = 0, n_m = 0, got = 0, from_u = 0, from_m = 0, bad = 0;
	size_t want, walked;
	unsigned long long refills0 = 0, refills1 = 0;
	size_t nblocks, first = 0, then = 0, max_pages;
	unsigned char *fate, *in_u, *head;
	uint64_t *pfns, f, last_u = 0, child_pfns[NR_CHILD + MAX_REFILLS];
	long long refill_blocks = 0, budget = 0, n;
	int c, k, pipefd[2], holdfd[2], st = -1;
	char *tables, *p;
	pid_t pid;

	pc_init(PLAN);
	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	{
		struct pc_zone_info zi;

		if (pc_nr_colors != 256 || access(PAGE_OWNER, R_OK) ||
		    pc_zone_info(ZONE, &zi)) {
			for (k = 0; k < PLAN; k++)
				tap_skip("needs 256 colours (%d), %s (boot with page_owner=on) "
					 "and zone %s", pc_nr_colors, PAGE_OWNER, ZONE);
			return tap_finish();
		}
		zone_start = zi.start_pfn;
		zone_end = zi.start_pfn + zi.spanned;
	}
	pb_order = pc_order_of(pc_pageblock_pages());
	nblocks = (zone_end >> pb_order) + 1;
	used = calloc(zone_end - zone_start, 1);
	in_u = calloc(zone_end - zone_start, 1);
	head = calloc(zone_end - zone_start, 1);
	fill_index = calloc(zone_end - zone_start, sizeof(*fill_index));
	types = calloc(nblocks, 1);
	if (!used || !in_u || !head || !fill_index || !types)
		return tap_finish();
	pc_write_file("/proc/self/oom_score_adj", "-1000");
	pc_run_on(0);		/* one CPU's per-cpu lists take what is freed */
	pc_wait_parked(1, 60000);
	pc_settle();
	pc_read_line(UNEVICTABLE, unevictable, sizeof(unevictable));
	pc_read_line(PROACTIVE, proactive, sizeof(proactive));
	pc_write_file(PROACTIVE, "0");
	pc_write_file(UNEVICTABLE, "0");
	pc_write_file(DROP_CACHES, "3");

	/* 1. and 2.; everything the steps after the fill use touched before it */
	max_pages = (size_t)pc_meminfo_kb("MemTotal") * 1024 / pc_page_size;
	pfns = calloc(max_pages, sizeof(*pfns));
	fate = calloc(max_pages, 1);
	if (!pfns || !fate)
		return tap_finish();
	memset(pfns, 1, max_pages * sizeof(*pfns));
	memset(fate, 1, max_pages);
	memset(used, 1, zone_end - zone_start);
	memset(in_u, 0, zone_end - zone_start);
	memset(head, 1, zone_end - zone_start);
	memset(fill_index, 1, (zone_end - zone_start) * sizeof(*fill_index));
	memset(types, 1, nblocks);
	tables = make_tables();
	tap_diag("page tables made: %lld single free pages in unmovable pageblocks",
		 free_blocks_of_order("Unmovable", 0));
	p = fill(&touched, max_pages);
	memset(fate, KEEP, max_pages);
	if (!tables || !p || pagecolor_pfns(p, touched, pfns) ||
	    pc_owner_scan(zone_start, zone_end, used, types, nblocks) < 0 || buddy_heads(head)) {
		tap_diag("setup: %s", strerror(errno));
		return tap_finish();
	}
	memset(fill_index, 0, (zone_end - zone_start) * sizeof(*fill_index));
	for (i = 0; i < touched; i++)
		if (pfns[i] >= zone_start && pfns[i] < zone_end)
			fill_index[pfns[i] - zone_start] = i + 1;
	/*
	 * U: frames of c in unmovable (or reclaimable) pageblocks whose buddy
	 * is in use: page-table frames left free, or the fill's, which go
	 * back first; c is the colour with most of them.
	 */
	for (f = zone_start; f < zone_end; f++)
		if (is_u(f, head[f - zone_start]))
			in_unmovable[pagecolor_pfn_color(f, pc_nr_colors)]++;
	for (c = 0, k = 1; k < pc_nr_colors; k++)
		if (in_unmovable[k] > in_unmovable[c])
			c = k;
	for (f = zone_start; f < zone_end; f++)
		if (pagecolor_pfn_color(f, pc_nr_colors) == c && is_u(f, head[f - zone_start])) {
			in_u[f - zone_start] = 1;
			n_u++;
			last_u = f;
		}

	/* 3. U and M first; the rest of the fill but c ^ 1 after them */
	for (i = 0; i < touched; i++) {
		int d;
		char t;

		f = pfns[i];
		if (f < zone_start || f >= zone_end)
			continue;	/* KEEP */
		d = pagecolor_pfn_color(f, pc_nr_colors) ^ c;
		t = types[f >> pb_order];
		if (d == 1 || !t)
			continue;
		if (d == 0) {
			if (in_u[f - zone_start])
				fate[i] = FIRST;
			continue;
		}
		/*
		 * In one 256-frame block in HOLES_EVERY, every other frame of
		 * the top quarter without c kept: single free pages ahead of
		 * M, where the other blocks keep a free block of each order
		 * 1-7 on the lists the search looks at first.
		 */
		if (t == 'M' && (f >> 8) % HOLES_EVERY == 0 && (d & 0xc0) == 0xc0 && (d & 1))
			continue;
		fate[i] = THEN;
	}
	/* M: the first NR_MOVABLE frames of c in movable pageblocks after U */
	for (k = 0, f = last_u + 1; k < 2 && n_m < NR_MOVABLE; k++, f = zone_start)
		for (; f < zone_end && n_m < NR_MOVABLE; f++) {
			uint32_t at = fill_index[f - zone_start];

			if (at && !fate[at - 1] && pagecolor_pfn_color(f, pc_nr_colors) == c &&
			    types[f >> pb_order] == 'M' && used[(f ^ 1) - zone_start]) {
				fate[at - 1] = FIRST;
				n_m++;
			}
		}
	first = give_back(p, fate, touched, FIRST);
	then = give_back(p, fate, touched, THEN);
	{
		char line[256];
		int at = 0;

		for (k = 0; k < 9; k++) {
			n = free_blocks_of_order("Movable", k);
			budget += n < LIST_SCAN ? n : LIST_SCAN;
			at += snprintf(line + at, sizeof(line) - at, " %lld", n);
		}
		tap_diag("free blocks of order 0-8 in movable pageblocks:%s", line);
	}
	if (budget > SCAN_LIMIT)
		budget = SCAN_LIMIT;
	refill_blocks = pc_pagetype_free(ZONE, "Unmovable", 8) +
			pc_pagetype_free(ZONE, "Movable", 8) +
			pc_pagetype_free(ZONE, "Reclaimable", 8);
	tap_ok(n_u >= 1 && n_m == NR_MOVABLE && budget >= SCAN_LIMIT,
	       "colour %d: %zu single free frames in unmovable pageblocks (%zu the fill's, "
	       "given back first; the last at pfn %llu), %zu given back in movable ones "
	       "after them; the movable free lists use up %lld of the %d blocks the list "
	       "search looks at; %lld free blocks of 256 pages or more (fill: %zu pages, "
	       "%zu given back after)", c, n_u, first - n_m, (unsigned long long)last_u,
	       n_m, budget, SCAN_LIMIT, refill_blocks, touched, then);

	/* 4. the child, which holds its pages while page_owner is read */
	want = NR_CHILD + (refill_blocks > 0 ? (refill_blocks < MAX_REFILLS ?
						 (size_t)refill_blocks : MAX_REFILLS) : 0);
	if (pipe(pipefd) || pipe(holdfd))
		return tap_finish();
	pagecolor_read_counter("refills", &refills0);
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		close(holdfd[1]);
		pc_child_touch_pfns(c, want, pipefd[1], holdfd[0]);
	}
	close(pipefd[1]);
	close(holdfd[0]);
	while (pid > 0 && got < want &&
	       read(pipefd[0], &child_pfns[got], sizeof(child_pfns[0])) == sizeof(child_pfns[0]))
		got++;
	close(pipefd[0]);
	pagecolor_read_counter("refills", &refills1);
	walked = got - (refills1 - refills0 < got ? refills1 - refills0 : got);
	for (i = 0; i < got; i++) {
		uint64_t f = child_pfns[i];
		int inz = f >= zone_start && f < zone_end;
		char now = pc_owner_block_type(f);

		bad += pagecolor_pfn_color(f, pc_nr_colors) != c;
		from_u += inz && in_u[f - zone_start] && (now == 'U' || now == 'R');
		from_m += now == 'M';
		tap_diag("child page %zu: pfn %llu, pageblock type %c, now %c%s", i,
			 (unsigned long long)f, inz && types[f >> pb_order] ?
			 types[f >> pb_order] : '?', now ? now : '?',
			 inz && in_u[f - zone_start] ? ", one of U" : "");
	}
	close(holdfd[1]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	tap_ok(got == want && bad == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "the child touched %zu of %zu pages, all of colour %d (%zu not; status 0x%x)",
	       got, want, c, bad, st);
	tap_ok(from_u == 0 && walked >= NR_CHILD / 2,
	       "none of them one of U in a pageblock still unmovable (%zu; %zu in movable "
	       "pageblocks; %llu refills, so %zu from the search)", from_u, from_m,
	       refills1 - refills0, walked);

	munmap(p, touched * pc_page_size);
	munmap(tables, NR_TABLES * TABLE_SPAN);
	pc_write_file(UNEVICTABLE, unevictable);
	pc_write_file(PROACTIVE, proactive);
	pc_settle();
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
