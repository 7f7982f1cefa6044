// SPDX-License-Identifier: GPL-2.0
/*
 * A page poisoned while it is parked in the colour lists is never handed
 * out (issue 13 item 6), as check_new_page() keeps a poisoned free page
 * out of the buddy allocator.
 *
 * A process bound to colour 0 faults one page: the colour allocator splits
 * a block holding every colour and parks the others, so the frame after
 * that page (colour 1) is parked.  It is poisoned through the hwpoison
 * injector (debugfs, CONFIG_HWPOISON_INJECT).  Then a process bound to
 * colour 1 takes every parked page of colour 1 and a few more: none may be
 * the poisoned frame, none may carry the HWPoison flag.
 */
#include "pc_test.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>

#define INJECT		"/sys/kernel/debug/hwpoison/corrupt-pfn"

int main(void)
{
	unsigned long counts[PAGE_COLOR_MAX_COLORS];
	uint64_t pfn0 = 0, victim, *pfns;
	size_t n, i, hit = 0, poisoned = 0;
	char *p, *q, text[32];
	int fds[2], st = -1;
	pid_t holder;

	pc_init(4);
	if (access(INJECT, W_OK))
		mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	if (access(INJECT, W_OK)) {
		tap_skip("no hwpoison injector (%s): CONFIG_HWPOISON_INJECT", INJECT);
		return tap_finish();
	}
	pagecolor_drain();

	/* the holder keeps its colour-0 page, so the block stays split */
	if (pipe(fds))
		return tap_finish();
	holder = fork();
	if (holder == 0) {
		p = pc_bound_pages("0", 1);
		if (!p || pagecolor_pfn(p, &pfn0))
			pfn0 = 0;
		if (write(fds[1], &pfn0, sizeof(pfn0)) != sizeof(pfn0))
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	if (holder < 0 || read(fds[0], &pfn0, sizeof(pfn0)) != sizeof(pfn0))
		pfn0 = 0;
	victim = pfn0 + 1;
	/* after the drain, one split block: the frame after pfn0 is parked */
	memset(counts, 0, sizeof(counts));
	pc_free_total(counts, PAGE_COLOR_MAX_COLORS);
	tap_ok(pfn0 && pagecolor_pfn_color(pfn0, pc_nr_colors) == 0 && counts[1] == 1,
	       "a colour-0 page (pfn %#llx) leaves one page of colour 1 parked (%lu)",
	       (unsigned long long)pfn0, pfn0 ? counts[1] : 0);

	snprintf(text, sizeof(text), "%#llx", (unsigned long long)victim);
	/* memory_failure() cannot handle a parked page: it fails, poisoned */
	if (pc_write_file(INJECT, text))
		tap_diag("corrupt-pfn %s: %s", text, strerror(errno));
	tap_ok(pfn0 && (pc_kpageflags(victim) & (1ULL << KPF_HWPOISON)),
	       "frame %s (colour 1, parked) is poisoned", text);

	/* every parked page of colour 1, and some fresh ones */
	n = counts[1] + 8;
	pfns = calloc(n, sizeof(*pfns));
	q = pfns ? pc_bound_pages("1", n) : NULL;
	if (q && pagecolor_pfns(q, n, pfns) == 0) {
		for (i = 0; i < n; i++) {
			hit += pfns[i] == victim;
			poisoned += !!(pc_kpageflags(pfns[i]) & (1ULL << KPF_HWPOISON));
		}
	}
	tap_ok(q && pfn0 && !hit && !poisoned,
	       "a colour-1 process given %zu pages gets no poisoned one "
	       "(the frame: %zu times, any poisoned: %zu)", n, hit, poisoned);

	kill(holder, SIGKILL);
	waitpid(holder, &st, 0);
	pc_settle();
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
