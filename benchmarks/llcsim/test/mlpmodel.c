/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mlpmodel - the mlp loops (loops.h) on a host test core (core.h) with a
 * given timing: cycles per unit and the ratios to the chase, against the
 * committed native ones (calibration/native-mlp.json).  A fraction of a
 * second, to see where a grid should lie before the guest fit (run.sh
 * calibrate), which is the one that counts: the host core approximates the
 * guest's pages, instruction counts and hash chains.
 *
 *   mlpmodel CPI ROB MSHR PF [PF_XLAT [MIB [UNITS]]]    e.g. mlpmodel 0.4 224 13 16
 */
#include <stdio.h>

#include "loops.h"

/* calibration/native-mlp.json, ratio medians */
#define NATIVE_RAND	13.70
#define NATIVE_STREAM	72.72
#define NATIVE_HASH	4.14

int main(int argc, char **argv)
{
	struct core c;
	double cpi, ch, ra, st, ha;
	uint64_t rob, mib, lines, pages;
	unsigned int mshr, pf, xbits;
	long units;

	if (argc < 5) {
		fprintf(stderr, "usage: mlpmodel CPI ROB MSHR PF [PF_XLAT [MIB [UNITS]]]\n");
		return 2;
	}
	cpi = atof(argv[1]);
	rob = strtoull(argv[2], NULL, 0);
	mshr = (unsigned int)atoi(argv[3]);
	pf = (unsigned int)atoi(argv[4]);
	xbits = argc > 5 ? (unsigned int)atoi(argv[5]) : 16;
	mib = argc > 6 ? strtoull(argv[6], NULL, 0) : 64;
	units = argc > 7 ? atol(argv[7]) : 100000;
	lines = mib << 14;
	pages = (mib << 8) + 4096 + 512;
	if (!rob || !mshr || mshr > TM_MAX_MSHR || !mib) {
		fprintf(stderr, "mlpmodel: ROB > 0, 1 <= MSHR <= %d, MIB > 0\n", TM_MAX_MSHR);
		return 2;
	}
#define ONE(expr, out) do { \
		if (core_init(&c, pages, pf, xbits, rob, mshr, cpi)) \
			return 1; \
		out = expr; \
		core_free(&c); \
	} while (0)
	ONE(loop_chase(&c, lines, units), ch);
	ONE(loop_rand(&c, lines, units), ra);
	ONE(loop_stream(&c, lines, units, 1), st);
	ONE(loop_hash(&c, (mib << 20) / 36, units), ha);
	printf("cpi %g rob %llu mshr %u pf %u pf_xlat %u, %llu MiB: cycles per unit chase %.1f rand %.2f "
	       "stream %.2f hash %.2f; ratio (error) rand %.2fx (%+.1f%%) stream %.2fx (%+.1f%%) hash %.2fx (%+.1f%%)\n",
	       cpi, (unsigned long long)rob, mshr, pf, xbits, (unsigned long long)mib, ch, ra, st, ha,
	       ch / ra, 100 * (ch / ra / NATIVE_RAND - 1), ch / st, 100 * (ch / st / NATIVE_STREAM - 1),
	       ch / ha, 100 * (ch / ha / NATIVE_HASH - 1));
	return 0;
}
