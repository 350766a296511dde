/* testutil.h - tiny helpers shared by the C tests (our own code). */
#ifndef DLMDB_TESTUTIL_H
#define DLMDB_TESTUTIL_H
#include "../lmdb.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

static int tu_failures;
static int tu_checks;

#define EXPECT(cond) do { tu_checks++; if (!(cond)) { tu_failures++; \
	fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define EXPECT_RC(call, want) do { int _rc = (call); tu_checks++; if (_rc != (want)) { tu_failures++; \
	fprintf(stderr, "%s:%d: %s returned %d (%s), wanted %d (%s)\n", __FILE__, __LINE__, #call, \
		_rc, mdb_strerror(_rc), (want), mdb_strerror(want)); } } while (0)
#define MUST(call) do { int _rc = (call); if (_rc) { fprintf(stderr, "%s:%d: %s failed: %s\n", \
	__FILE__, __LINE__, #call, mdb_strerror(_rc)); exit(2); } } while (0)

/* splitmix64: deterministic, seedable */
static inline uint64_t tu_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}
static inline unsigned tu_below(uint64_t *s, unsigned n) { return (unsigned)(tu_next(s) % n); }

static inline void tu_fresh_dir(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "cannot prepare %s\n", dir);
		exit(2);
	}
}

static inline int tu_scale(void)
{
	const char *s = getenv("DLMDB_TEST_SCALE");
	int v = s ? atoi(s) : 1;
	return v > 0 ? v : 1;
}

/* The whole file at path (exits on failure); *len gets its size. */
static inline unsigned char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *img = malloc(*len ? *len : 1);
	if (!img || fread(img, 1, *len, f) != *len) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	return img;
}

/* Overwrite the start of the file at path with img (exits on failure). */
static inline void tu_write_file(const char *path, const unsigned char *img, size_t len)
{
	FILE *f = fopen(path, "r+b");
	if (!f || fwrite(img, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
}

static inline int tu_finish(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, tu_checks, tu_failures);
	return tu_failures ? 1 : 0;
}
#endif
