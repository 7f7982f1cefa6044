/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Guest side of the llcsim plugin's control channel: a magic 8-byte NOP,
 * nopl disp32(%rax,%rax,1) = 0f 1f 84 00 <disp32>, disp32 = 0x4C5 << 20 |
 * cmd << 16 | arg.  It is a plain NOP on real hardware and under QEMU without
 * the plugin.  Because the argument is part of the instruction, each
 * (cmd, arg) pair gets its own tiny executable stub, generated at run time
 * (one page each, cached).
 */
#ifndef LLCSIM_GUEST_H
#define LLCSIM_GUEST_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define LLCSIM_BEGIN	1
#define LLCSIM_END	2
#define LLCSIM_RESUME	3
#define LLCSIM_TRACE	4
#define LLCSIM_FLUSH	5
#define LLCSIM_WAYS	6	/* arg = LLC way mask this vCPU may fill, 0 = all */

struct llcsim_stub { uint32_t disp; void *code; };
static struct llcsim_stub llcsim_stubs[256];
static int llcsim_nstubs;

/* with_load: the stub is "magic; mov (%rdi),%rax; ret" (for TRACE). */
static void *llcsim_stub(uint32_t cmd, uint32_t arg, int with_load)
{
	uint32_t disp = 0x4C5u << 20 | (cmd & 0xf) << 16 | (arg & 0xffff);
	uint32_t key = disp ^ (with_load ? 0x80000000u : 0);
	int i;
	for (i = 0; i < llcsim_nstubs; i++)
		if (llcsim_stubs[i].disp == key)
			return llcsim_stubs[i].code;
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uint8_t code[16] = { 0x0f, 0x1f, 0x84, 0x00 };
	int n = 8;
	memcpy(code + 4, &disp, 4);
	if (with_load) {
		code[n++] = 0x48; code[n++] = 0x8b; code[n++] = 0x07;	/* mov (%rdi),%rax */
	}
	code[n++] = 0xc3;	/* ret */
	memcpy(p, code, (size_t)n);
	if (llcsim_nstubs < 256) {
		llcsim_stubs[llcsim_nstubs].disp = key;
		llcsim_stubs[llcsim_nstubs++].code = p;
	}
	return p;
}

static inline void llcsim_op(uint32_t cmd, uint32_t arg)
{
	void (*f)(void) = (void (*)(void))llcsim_stub(cmd, arg, 0);
	if (f)
		f();
}

/* Load the word at p right after a TRACE 1 command: the plugin logs its
 * physical address. */
static inline uint64_t llcsim_trace_load(const void *p)
{
	uint64_t (*f)(const void *) = (uint64_t (*)(const void *))llcsim_stub(LLCSIM_TRACE, 1, 1);
	return f ? f(p) : 0;
}

/* Create the stubs of a measured region in advance (so that no mmap or page
 * fault happens inside it). */
static inline void llcsim_prepare(uint32_t tag)
{
	llcsim_stub(LLCSIM_BEGIN, tag, 0);
	llcsim_stub(LLCSIM_END, tag, 0);
}

#endif /* LLCSIM_GUEST_H */
