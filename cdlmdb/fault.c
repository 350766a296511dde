/*
 * fault.c - fault injection in the write and sync calls of a commit.
 *
 * Compiled to something only with -DDLMDB_FAULTS (the C tests): the
 * DL_PWRITE / DL_PWRITEV / DL_FDATASYNC / DL_MSYNC macros of internal.h
 * then come here instead of calling the system.  A test arms one fault
 * at a time: the nth write (pwrite or pwritev) or the nth sync (fdatasync
 * or msync) counted from the last reset fails with a chosen errno, once
 * or from then on (sticky).  A failed write writes nothing (or, asked
 * to, the nth writes everything and still reports the error, and later
 * sticky failures write nothing); a short one
 * writes up to the last 4 KiB block boundary inside what was asked and
 * reports that length, as a write that ran out of space midway does (a
 * write within one block cannot be cut short: it fails instead).  A failed sync does not sync:
 * what was written stays in the page cache, as after a real EIO; asked
 * to (DL_FAULT_BREAK), the nth sync also makes every write from then on
 * fail with the same errno, writing nothing, as a device gone bad does.
 */
#include "internal.h"

#ifdef DLMDB_FAULTS

static struct {
	unsigned long nth[2];	/* 0: not armed */
	int err[2];
	unsigned how[2];
	unsigned long calls[2];
	int at_site[2];		/* site + 1: arm nth at the first call made there */
	unsigned long hits[DL_IO_NSITES];	/* failed calls */
	unsigned long sites[DL_IO_NSITES];	/* all calls */
	unsigned long shorts;
	int fake_sync;
} flt;

void dlmdb_fault_reset(void)
{
	memset(&flt, 0, sizeof flt);
}

void dlmdb_fault_arm(int kind, unsigned long nth, int err, unsigned how)
{
	flt.nth[kind] = nth;
	flt.err[kind] = err;
	flt.how[kind] = how;
}

void dlmdb_fault_arm_at(int kind, int site, int err, unsigned how)
{
	flt.nth[kind] = 0;
	flt.at_site[kind] = site + 1;
	flt.err[kind] = err;
	flt.how[kind] = how;
}

unsigned long dlmdb_fault_calls(int kind)
{
	return __atomic_load_n(&flt.calls[kind], __ATOMIC_RELAXED);
}

unsigned long dlmdb_fault_hits(int site)
{
	return __atomic_load_n(&flt.hits[site], __ATOMIC_RELAXED);
}

unsigned long dlmdb_fault_site_calls(int site)
{
	return __atomic_load_n(&flt.sites[site], __ATOMIC_RELAXED);
}

unsigned long dlmdb_fault_shorts(void)
{
	return __atomic_load_n(&flt.shorts, __ATOMIC_RELAXED);
}

void dlmdb_fault_fake_sync(int on)
{
	flt.fake_sync = on;
}

/* Where a short write of len bytes at off stops: at the last 4 KiB block
 * boundary of the file inside the range, as a write that runs out of space
 * when it needs a new block does; 0 for a write within one block, which
 * the kernel never tears (it fails whole instead). */
static size_t short_cut(off_t off, size_t len)
{
	if (!len)
		return 0;
	off_t b = (off + (off_t)len - 1) & ~(off_t)4095;
	return b > off ? (size_t)(b - off) : 0;
}

/* 0: let the call through; 1: cut it short (to cut bytes: only a write
 * across a block boundary can be); 2: fail it (the nth call), 3: fail it
 * (a later call of a sticky fault) */
static int fault_decide(int kind, int site, size_t cut)
{
	unsigned long n = __atomic_add_fetch(&flt.calls[kind], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&flt.sites[site], 1, __ATOMIC_RELAXED);
	if (flt.at_site[kind] == site + 1) {
		flt.at_site[kind] = 0;
		flt.nth[kind] = n;
	}
	unsigned long at = flt.nth[kind];
	if (!at || n < at || (n > at && !(flt.how[kind] & DL_FAULT_STICKY)))
		return 0;
	if (n == at && (flt.how[kind] & DL_FAULT_SHORT) && cut) {
		__atomic_add_fetch(&flt.shorts, 1, __ATOMIC_RELAXED);
		return 1;
	}
	__atomic_add_fetch(&flt.hits[site], 1, __ATOMIC_RELAXED);
	if (n == at && kind == DL_FAULT_SYNC && (flt.how[kind] & DL_FAULT_BREAK)) {
		flt.nth[DL_FAULT_WRITE] = flt.calls[DL_FAULT_WRITE] + 1;
		flt.err[DL_FAULT_WRITE] = flt.err[kind];
		flt.how[DL_FAULT_WRITE] = DL_FAULT_STICKY;
	}
	return n == at ? 2 : 3;
}

ssize_t dlmdb_io_pwrite(int site, int fd, const void *buf, size_t len, off_t off)
{
	size_t cut = short_cut(off, len);
	int f = fault_decide(DL_FAULT_WRITE, site, cut);
	if (f == 1)
		return pwrite(fd, buf, cut, off);
	if (f == 2 && (flt.how[DL_FAULT_WRITE] & DL_FAULT_LEAVE))
		(void)pwrite(fd, buf, len, off);
	if (f) {
		errno = flt.err[DL_FAULT_WRITE];
		return -1;
	}
	return pwrite(fd, buf, len, off);
}

ssize_t dlmdb_io_pwritev(int site, int fd, const struct iovec *iov, int cnt, off_t off)
{
	size_t total = 0;
	for (int i = 0; i < cnt; i++)
		total += iov[i].iov_len;
	size_t cut = cnt <= 64 ? short_cut(off, total) : 0;
	int f = fault_decide(DL_FAULT_WRITE, site, cut);
	if (f == 1) {
		/* the bytes up to the cut, cutting the iovec there */
		struct iovec part[64];
		size_t want = cut;
		int k = 0;
		for (; k < cnt && want; k++) {
			part[k] = iov[k];
			if (part[k].iov_len > want)
				part[k].iov_len = want;
			want -= part[k].iov_len;
		}
		return pwritev(fd, part, k, off);
	}
	if (f == 2 && (flt.how[DL_FAULT_WRITE] & DL_FAULT_LEAVE))
		(void)pwritev(fd, iov, cnt, off);
	if (f) {
		errno = flt.err[DL_FAULT_WRITE];
		return -1;
	}
	return pwritev(fd, iov, cnt, off);
}

int dlmdb_io_fdatasync(int site, int fd)
{
	if (fault_decide(DL_FAULT_SYNC, site, 0)) {
		errno = flt.err[DL_FAULT_SYNC];
		return -1;
	}
	return flt.fake_sync ? 0 : fdatasync(fd);
}

int dlmdb_io_msync(int site, void *addr, size_t len, int how)
{
	if (fault_decide(DL_FAULT_SYNC, site, 0)) {
		errno = flt.err[DL_FAULT_SYNC];
		return -1;
	}
	return flt.fake_sync ? 0 : msync(addr, len, how);
}

#else
/* without the hook this file holds nothing (ISO C wants a declaration) */
typedef int dl_fault_unused;
#endif
