// SPDX-License-Identifier: GPL-2.0
/*
 * Host-side unit test of libpagecolor (TAP): colour-set parsing/formatting,
 * cache sizes and geometry (the real sysfs and a made-up tree), and the
 * "unsupported" path on a stock kernel.  The stock
 * kernel path is only asserted when /sys/kernel/mm/page_coloring is absent.
 */
#define _GNU_SOURCE
#include "pagecolor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static int size_is(const char *text, long long want)
{
	long long v = -1;

	if (pagecolor_parse_size(text, &v) != 0 || v != want) {
		printf("# size '%s' -> %lld, want %lld\n", text, v, want);
		return 0;
	}
	return 1;
}

static int not_a_size(const char *text)
{
	long long v;

	errno = 0;
	return pagecolor_parse_size(text, &v) == -1 && (errno == EINVAL || errno == ERANGE);
}

/* dir/name := text */
static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* cache/indexN with level, type, size, ways under root */
static void put_index(const char *root, int n, const char *level, const char *type,
		      const char *size)
{
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/index%d", root, n);
	mkdir(dir, 0755);
	put(dir, "level", level);
	put(dir, "type", type);
	put(dir, "size", size);
	put(dir, "ways_of_associativity", "16\n");
	put(dir, "coherency_line_size", "64\n");
	put(dir, "shared_cpu_list", "0-3\n");
}

static void test_made_up_tree(void)
{
	char root[] = "/tmp/pagecolor-test-XXXXXX";
	struct pagecolor_geometry g;
	int idx = -1, level = -1;

	if (!mkdtemp(root)) {
		ok(0, "made-up cache tree: mkdtemp");
		return;
	}
	put_index(root, 0, "1\n", "Data\n", "48K\n");
	put_index(root, 1, "1\n", "Instruction\n", "32K\n");
	put_index(root, 2, "2\n", "Unified\n", "2048K\n");
	put_index(root, 3, "3\n", "Unified\n", "32m\n");
	ok(pagecolor_llc_index(root, &idx, &level) == 0 && idx == 3 && level == 3,
	   "made-up tree: the LLC is the highest data level (index3, L3)");
	ok(pagecolor_geometry_dir(root, &g) == 0 && g.level == 3 &&
	   g.size == 32LL << 20 && g.ways == 16 && g.line_size == 64 &&
	   strcmp(g.shared_cpus, "0-3") == 0,
	   "made-up tree: geometry of index3, 32m is 32 MiB");
	put(root, "index3/level", "3K\n");
	ok(pagecolor_llc_index(root, &idx, &level) == 0 && idx == 2 && level == 2,
	   "a level with a unit is no level: the L2 is the LLC");
	put(root, "index3/level", "3\n");
	put(root, "index3/type", "Instruction\n");
	put(root, "index2/type", "Instruction\n");
	put(root, "index0/type", "Instruction\n");
	errno = 0;
	ok(pagecolor_llc_index(root, &idx, &level) == -1 && errno == ENOENT,
	   "only instruction caches: ENOENT");
	for (int i = 0; i < 4; i++) {
		const char *names[] = {"level", "type", "size", "ways_of_associativity",
				       "coherency_line_size", "shared_cpu_list"};
		char path[512];

		for (int j = 0; j < 6; j++) {
			snprintf(path, sizeof(path), "%s/index%d/%s", root, i, names[j]);
			unlink(path);
		}
		snprintf(path, sizeof(path), "%s/index%d", root, i);
		rmdir(path);
	}
	rmdir(root);
}

int main(void)
{
	pagecolor_set_t s;
	char buf[8];
	struct pagecolor_geometry g;
	int stock, mode, r;

	printf("TAP version 13\n1..27\n");
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
	ok(size_is("32K", 32768) && size_is("1024K\n", 1048576) &&
	   size_is("8M", 8LL << 20) && size_is("8192K", 8LL << 20) &&
	   size_is("8m\n", 8LL << 20) && size_is("1G", 1LL << 30) &&
	   size_is("512", 512) && size_is("0K", 0),
	   "sizes as sysfs prints them: K, M, G in either case, bytes without a unit");
	ok(not_a_size("") && not_a_size("-1K") && not_a_size("8 M") && not_a_size("8MB") &&
	   not_a_size("K") && not_a_size("0x10") && not_a_size("99999999999999999999") &&
	   not_a_size("9223372036854775807G"),
	   "not sizes: empty, negative, inner space, MB, no digits, hex, too large");
	test_made_up_tree();
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
