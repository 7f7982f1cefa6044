// SPDX-License-Identifier: GPL-2.0
/*
 * Every bad argument gets its errno (see page_color.h and
 * Documentation/admin-guide/mm/page_coloring.rst):
 * EINVAL bad mode, flags, range, empty mask, colours >= nr_colors,
 * maxcolor > PAGE_COLOR_MAX_COLORS; EFAULT bad pointers; ENOMEM unmapped
 * range.
 */
#include "pc_test.h"

#include <sys/mman.h>

#if __SIZEOF_LONG__ == 8
#define KADDR	((void *)0xffffffff81000000UL)
#else
/* the 32-bit build (color_errno32): above the address space of a 32-bit task */
#define KADDR	((void *)0xfffff000UL)
#endif

static int expect(long ret, int want, const char *call)
{
	int e = errno;

	if (want == 0) {
		if (ret == 0)
			return 1;
		tap_diag("%s: returned %ld errno %d (%s), want success", call, ret,
			 e, strerror(e));
		return 0;
	}
	if (ret == -1 && e == want)
		return 1;
	tap_diag("%s: returned %ld errno %d (%s), want -1 errno %d (%s)", call,
		 ret, ret == -1 ? e : 0, ret == -1 ? strerror(e) : "-", want,
		 strerror(want));
	return 0;
}

#define EXPECT(call, want) (errno = 0, expect((call), (want), #call))

/* Bit @c of a mask of unsigned longs. */
static int mask_bit(const unsigned long *m, unsigned long c)
{
	unsigned long bits = 8 * sizeof(*m);

	return !!(m[c / bits] & (1UL << (c % bits)));
}

int main(void)
{
	unsigned long mask[PAGECOLOR_SET_LONGS], empty[PAGECOLOR_SET_LONGS];
	unsigned long big[PAGECOLOR_SET_LONGS + 1];
	unsigned long nr, ps;
	char *p, *ro, *hole;
	int mode, ok;

	pc_init(44);
	nr = (unsigned long)pc_nr_colors;
	ps = (unsigned long)pc_page_size;
	memset(mask, 0, sizeof(mask));
	memset(empty, 0, sizeof(empty));
	memset(big, 0, sizeof(big));
	mask[0] = 1;				/* colour 0 */
	p = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || ro == MAP_FAILED || hole == MAP_FAILED) {
		tap_diag("mmap failed");
		return tap_finish();
	}
	munmap(hole + ps, ps);			/* hole in the middle */

	/* set_color_policy */
	tap_ok(EXPECT(pagecolor_sys_set_color_policy(3, mask, nr), EINVAL),
	       "set_color_policy: mode 3 -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_set_color_policy(-1, mask, nr), EINVAL),
	       "set_color_policy: mode -1 -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, empty, nr), EINVAL),
	       "set_color_policy: BIND with empty mask -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_PREFERRED, empty, nr), EINVAL),
	       "set_color_policy: PREFERRED with empty mask -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, mask, 0), EINVAL),
	       "set_color_policy: BIND with maxcolor 0 (empty) -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, big,
						     PAGE_COLOR_MAX_COLORS + 1), EINVAL),
	       "set_color_policy: maxcolor > PAGE_COLOR_MAX_COLORS -> EINVAL");
	if (nr < PAGE_COLOR_MAX_COLORS) {
		unsigned long m2[PAGECOLOR_SET_LONGS];

		memset(m2, 0, sizeof(m2));
		m2[0] = 1;
		m2[nr / PAGECOLOR_BITS_PER_LONG] |= 1UL << (nr % PAGECOLOR_BITS_PER_LONG);
		tap_ok(EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, m2,
							     PAGE_COLOR_MAX_COLORS), EINVAL),
		       "set_color_policy: colour nr_colors (%lu) in mask -> EINVAL", nr);
	} else {
		tap_skip("set_color_policy: colour beyond nr_colors (nr_colors is the maximum)");
	}
	tap_ok(EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, NULL, nr), EFAULT),
	       "set_color_policy: NULL mask -> EFAULT");
	tap_ok(EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, KADDR, nr), EFAULT),
	       "set_color_policy: kernel address mask -> EFAULT");
	tap_ok(EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_BIND,
						     (unsigned long *)(hole + ps), nr), EFAULT),
	       "set_color_policy: unmapped mask -> EFAULT");
	tap_ok(EXPECT(pagecolor_sys_set_color_policy_flags(COLOR_MODE_BIND, mask, nr, 1), EINVAL),
	       "set_color_policy: flags 1 -> EINVAL (no flag is defined)");
	tap_ok(EXPECT(pagecolor_sys_set_color_policy_flags(COLOR_MODE_DEFAULT, NULL, 0,
							   0x80000000U), EINVAL),
	       "set_color_policy: DEFAULT with flags 0x80000000 -> EINVAL");
	ok = EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, mask, nr), 0) &&
	     EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_DEFAULT, NULL, 0), 0);
	tap_ok(ok, "set_color_policy: valid BIND, then DEFAULT with NULL mask succeed");

	/* color_mbind */
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ps, 7, mask, nr, 0), EINVAL),
	       "color_mbind: mode 7 -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ps, COLOR_MODE_BIND,
						mask, nr, 1U << 5), EINVAL),
	       "color_mbind: unknown flag -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ps, COLOR_MODE_BIND,
						mask, nr, ~0U), EINVAL),
	       "color_mbind: all flags set -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p + 1, ps, COLOR_MODE_BIND,
						mask, nr, 0), EINVAL),
	       "color_mbind: unaligned start -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, -ps, COLOR_MODE_BIND,
						mask, nr, 0), EINVAL),
	       "color_mbind: wrapping range -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ~0UL, COLOR_MODE_BIND,
						mask, nr, 0), EINVAL),
	       "color_mbind: length rounding up past the end (~0UL) -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ps, COLOR_MODE_BIND,
						empty, nr, 0), EINVAL),
	       "color_mbind: empty mask -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ps, COLOR_MODE_PREFERRED,
						mask, 0, 0), EINVAL),
	       "color_mbind: PREFERRED with maxcolor 0 -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ps, COLOR_MODE_BIND,
						big, PAGE_COLOR_MAX_COLORS + 1, 0), EINVAL),
	       "color_mbind: maxcolor > PAGE_COLOR_MAX_COLORS -> EINVAL");
	if (nr < PAGE_COLOR_MAX_COLORS) {
		unsigned long m2[PAGECOLOR_SET_LONGS];

		memset(m2, 0, sizeof(m2));
		m2[(PAGE_COLOR_MAX_COLORS - 1) / PAGECOLOR_BITS_PER_LONG] =
			1UL << ((PAGE_COLOR_MAX_COLORS - 1) % PAGECOLOR_BITS_PER_LONG);
		tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ps, COLOR_MODE_BIND,
							m2, PAGE_COLOR_MAX_COLORS, 0), EINVAL),
		       "color_mbind: colour 1023 beyond nr_colors -> EINVAL");
	} else {
		tap_skip("color_mbind: colour beyond nr_colors (nr_colors is the maximum)");
	}
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ps, COLOR_MODE_BIND,
						NULL, nr, 0), EFAULT),
	       "color_mbind: NULL mask -> EFAULT");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ps, COLOR_MODE_BIND,
						KADDR, nr, 0), EFAULT),
	       "color_mbind: kernel address mask -> EFAULT");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)hole + ps, ps, COLOR_MODE_BIND,
						mask, nr, 0), ENOMEM),
	       "color_mbind: unmapped range -> ENOMEM");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)hole, 3 * ps, COLOR_MODE_BIND,
						mask, nr, 0), ENOMEM),
	       "color_mbind: range with a hole -> ENOMEM");
	tap_ok(EXPECT(pagecolor_sys_color_mbind((unsigned long)p, ps, COLOR_MODE_BIND,
						mask, nr, 0), 0) &&
	       EXPECT(pagecolor_sys_color_mbind((unsigned long)p, 4 * ps, COLOR_MODE_BIND,
						mask, nr, COLOR_MBIND_MIGRATE), 0) &&
	       EXPECT(pagecolor_sys_color_mbind((unsigned long)p, 4 * ps, COLOR_MODE_DEFAULT,
						NULL, 0, 0), 0),
	       "color_mbind: valid calls (bind, migrate, default) succeed");

	/* get_color_policy */
	tap_ok(EXPECT(pagecolor_sys_get_color_policy(&mode, mask, PAGE_COLOR_MAX_COLORS,
						     (unsigned long)p, 0), EINVAL),
	       "get_color_policy: addr without COLOR_POLICY_ADDR -> EINVAL (as get_mempolicy)");
	tap_ok(EXPECT(pagecolor_sys_get_color_policy((int *)(hole + ps), mask,
						     PAGE_COLOR_MAX_COLORS, 0, 0), EFAULT),
	       "get_color_policy: unmapped mode pointer -> EFAULT");
	tap_ok(EXPECT(pagecolor_sys_get_color_policy((int *)KADDR, mask,
						     PAGE_COLOR_MAX_COLORS, 0, 0), EFAULT),
	       "get_color_policy: kernel address mode pointer -> EFAULT");
	tap_ok(EXPECT(pagecolor_sys_get_color_policy(&mode, (unsigned long *)KADDR,
						     PAGE_COLOR_MAX_COLORS, 0, 0), EFAULT),
	       "get_color_policy: kernel address mask pointer -> EFAULT");
	tap_ok(EXPECT(pagecolor_sys_get_color_policy(&mode, (unsigned long *)ro,
						     PAGE_COLOR_MAX_COLORS, 0, 0), EFAULT),
	       "get_color_policy: read-only mask buffer -> EFAULT");
	tap_ok(EXPECT(pagecolor_sys_get_color_policy(&mode, mask, PAGE_COLOR_MAX_COLORS,
						     0, 1U << 7), EINVAL),
	       "get_color_policy: unknown flag -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_get_color_policy(&mode, big, PAGE_COLOR_MAX_COLORS + 1,
						     0, 0), EINVAL),
	       "get_color_policy: maxcolor > PAGE_COLOR_MAX_COLORS -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_get_color_policy(&mode, mask, PAGE_COLOR_MAX_COLORS,
						     (unsigned long)hole + ps, COLOR_POLICY_ADDR),
		      EFAULT),
	       "get_color_policy: COLOR_POLICY_ADDR on an unmapped address -> EFAULT");
	tap_ok(EXPECT(pagecolor_sys_get_color_policy(&mode, mask, nr - 1, 0, 0), EINVAL),
	       "get_color_policy: maxcolor < nr_colors -> EINVAL");
	tap_ok(EXPECT(pagecolor_sys_get_color_policy(&mode, mask, PAGE_COLOR_MAX_COLORS,
						     (unsigned long)p, COLOR_POLICY_ADDR), 0) &&
	       mode == COLOR_MODE_DEFAULT,
	       "get_color_policy: valid COLOR_POLICY_ADDR call succeeds (mode default)");
	tap_ok(EXPECT(pagecolor_sys_get_color_policy(&mode, mask, PAGE_COLOR_MAX_COLORS, 0, 0), 0)
	       && mode == COLOR_MODE_DEFAULT,
	       "get_color_policy: task default is default after the errors above");

	/*
	 * A mask is an array of the caller's unsigned longs (32-bit ones in
	 * color_errno32): one that ends where the page before an unmapped one
	 * ends is read and written exactly, not in the kernel's wider words.
	 */
	{
		unsigned long bits = 8 * sizeof(unsigned long);
		unsigned long *end = (unsigned long *)(hole + ps);
		unsigned long *one = end - 1, *m;
		unsigned long width = nr + 32 <= PAGE_COLOR_MAX_COLORS ? nr + 32 : nr;
		unsigned long words = (width + bits - 1) / bits;
		unsigned long nr_words = (nr + bits - 1) / bits;
		unsigned long c, bad = 0;
		int colors[3] = { 0, (int)nr / 2 + 1, (int)nr - 1 };
		pagecolor_set_t want;

		*one = 1;			/* colour 0, in a mask of 32 bits */
		tap_ok(EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, one, 32), 0) &&
		       EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_DEFAULT, NULL, 0), 0),
		       "set_color_policy: a 32-bit mask in the page's last word is read exactly");
		m = end - words;
		memset(m, 0xa5, words * sizeof(*m));
		ok = EXPECT(pagecolor_sys_get_color_policy(&mode, m, width, 0, 0), 0);
		for (c = 0; ok && c < words * bits; c++)
			bad += mask_bit(m, c) != (c < nr);
		tap_ok(ok && mode == COLOR_MODE_DEFAULT && !bad,
		       "get_color_policy: a mask of %lu bits, %lu unsigned longs, in the page's last words gets all %lu colours, %lu wrong bits",
		       width, words, nr, bad);
		pagecolor_set_zero(&want);
		for (c = 0; c < 3; c++)
			pagecolor_set_add(&want, colors[c]);
		m = end - nr_words;
		memcpy(m, want.bits, nr_words * sizeof(*m));
		ok = EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_BIND, m, nr), 0);
		memset(m, 0xff, nr_words * sizeof(*m));
		ok = ok && EXPECT(pagecolor_sys_get_color_policy(&mode, m, nr, 0, 0), 0);
		for (c = 0, bad = 0; ok && c < nr; c++)
			bad += mask_bit(m, c) != pagecolor_set_test(&want, (int)c);
		ok = ok && mode == COLOR_MODE_BIND && !bad;
		tap_ok(EXPECT(pagecolor_sys_set_color_policy(COLOR_MODE_DEFAULT, NULL, 0), 0) && ok,
		       "set then get colours %d, %d and %d of %lu: the same bits back, %lu wrong",
		       colors[0], colors[1], colors[2], nr, bad);
	}

	/* failed calls must not have changed anything */
	{
		struct pc_check r;
		pagecolor_set_t all;

		pagecolor_set_fill(&all, pc_nr_colors);
		pc_touch(p, 4);
		tap_ok(pc_check_range(p, 4, &all, &r) == 0 && !r.absent && !r.bad,
		       "memory usable after the error paths");
		/* colour-0 only would make this unlikely for 4 pages of a default range */
	}
	tap_ok(pc_dmesg_trouble() == 0, "no BUG/WARNING/Oops in dmesg");
	return tap_finish();
}
