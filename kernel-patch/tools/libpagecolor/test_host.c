// SPDX-License-Identifier: GPL-2.0
/*
 * Host-side unit test of libpagecolor (TAP): colour-set parsing/formatting,
 * cache geometry, and the "unsupported" path on a stock kernel.  The stock
 * kernel path is only asserted when /sys/kernel/mm/page_coloring is absent.
 */
#define _GNU_SOURCE
#include "pagecolor.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int n_test, n_fail;

static void ok(int cond, const char *what)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n_test, what);
}

static int roundtrip(const char *in, const char *want)
{
	pagecolor_set_t s;
	char buf[256];

	if (pagecolor_set_parse(&s, in, 0) != 0)
		return 0;
	pagecolor_set_format(&s, buf, sizeof(buf));
	if (strcmp(buf, want) != 0) {
		printf("# parse '%s' -> '%s', want '%s'\n", in, buf, want);
		return 0;
	}
	return 1;
}

int main(void)
{
	pagecolor_set_t s;
	char buf[8];
	struct pagecolor_geometry g;
	int stock, mode, r;

	printf("TAP version 13\n1..21\n");
	ok(roundtrip("0-3,8,10-11", "0-3,8,10-11"), "parse/format 0-3,8,10-11");
	ok(roundtrip(" 5 , 1-2 ,3", "1-3,5"), "parse merges and sorts");
	ok(roundtrip("", ""), "empty string is the empty set");
	ok(roundtrip("1023", "1023"), "highest colour");
	errno = 0;
	ok(pagecolor_set_parse(&s, "1024", 0) == -1 && errno == ERANGE,
	   "colour 1024 -> ERANGE");
	errno = 0;
	ok(pagecolor_set_parse(&s, "8", 8) == -1 && errno == ERANGE,
	   "colour >= limit -> ERANGE");
	errno = 0;
	ok(pagecolor_set_parse(&s, "3-1", 0) == -1 && errno == EINVAL,
	   "reversed range -> EINVAL");
	errno = 0;
	ok(pagecolor_set_parse(&s, "1,,2", 0) == -1 && errno == EINVAL &&
	   pagecolor_set_parse(&s, "x", 0) == -1 &&
	   pagecolor_set_parse(&s, "-1", 0) == -1, "garbage -> EINVAL");
	ok(pagecolor_set_parse(&s, "all", 32) == 0 &&
	   pagecolor_set_count(&s) == 32 && pagecolor_set_width(&s) == 32,
	   "all = 0..limit-1");
	pagecolor_set_parse(&s, "0-1023", 0);
	ok(pagecolor_set_format(&s, buf, sizeof(buf)) == 6 &&
	   strcmp(buf, "0-1023") == 0, "format exact fit");
	pagecolor_set_parse(&s, "0-3,100-200", 0);
	r = pagecolor_set_format(&s, buf, sizeof(buf));
	ok(r == 11 && strlen(buf) < sizeof(buf), "format truncates, returns full length");
	ok(pagecolor_set_add(&s, 1024) == -1 && pagecolor_set_test(&s, -1) == -1,
	   "set ops reject out-of-range colours");

	{
		char t1[] = "0 5\n1 7\n2 0\n3 12\n", t2[] = "4 5 6\n";
		unsigned long cnt[4];

		ok(pagecolor_parse_free_pages(t1, cnt, 4) == 4 && cnt[0] == 5 &&
		   cnt[1] == 7 && cnt[2] == 0 && cnt[3] == 12,
		   "free_pages parser: '<colour> <pages>' lines");
		ok(pagecolor_parse_free_pages(t2, cnt, 4) == -1 ||
		   (cnt[0] == 0 && cnt[1] == 0), "free_pages parser: junk line ignored");
	}
	r = pagecolor_geometry(&g);
	if (r == 0)
		printf("# LLC L%d %lld bytes, %d ways, line %d, cpus %s, colours %d\n",
		       g.level, g.size, g.ways, g.line_size, g.shared_cpus, g.colors);
	ok(r == 0 ? (g.size > 0 && g.ways > 0 && g.colors > 0) : errno == ENOENT,
	   "geometry read (or ENOENT without cacheinfo)");

	stock = access(PAGECOLOR_SYSFS_DIR, F_OK) != 0;
	if (!stock)
		printf("# %s exists: stock-kernel checks skipped\n", PAGECOLOR_SYSFS_DIR);
	errno = 0;
	r = pagecolor_supported();
	ok(stock ? (r == 0 && errno == ENOENT) : 1,
	   "stock kernel: pagecolor_supported() == 0, errno ENOENT");
	ok(stock ? pagecolor_supported() == 0 : 1, "probe result is cached");
	errno = 0;
	ok(stock ? (pagecolor_nr_colors() == -1) : 1, "stock kernel: nr_colors == -1");
	pagecolor_set_fill(&s, 4);
	errno = 0;
	ok(stock ? (pagecolor_set_policy(COLOR_MODE_BIND, &s) == -1 && errno == ENOSYS) : 1,
	   "stock kernel: set_policy -> ENOSYS without issuing a syscall");
	errno = 0;
	ok(stock ? (pagecolor_get_policy(&mode, &s, NULL, 0) == -1 && errno == ENOSYS &&
		    pagecolor_mbind(&s, 4096, COLOR_MODE_BIND, &s, 0) == -1 && errno == ENOSYS)
	      : 1, "stock kernel: get_policy/mbind -> ENOSYS");
	errno = 0;
	ok(stock ? (pagecolor_page_color(&s) == -1 && errno == ENOSYS) : 1,
	   "stock kernel: page_color -> ENOSYS");
	printf("# %d/%d failed\n", n_fail, n_test);
	return n_fail ? 1 : 0;
}
