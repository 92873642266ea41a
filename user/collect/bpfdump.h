/* SPDX-License-Identifier: MIT */
/* A BPF program's or map's contents as arrays of fixed-size records. */
#ifndef KHBPF_BPFDUMP_H
#define KHBPF_BPFDUMP_H

#include <stddef.h>

struct bpf_program;

/*
 * Runs a task iterator and collects its fixed-size records into a malloc'd
 * array *out of *nr records. 0 or -errno.
 */
int bpfdump__iter(struct bpf_program *prog, size_t rec_size, void **out, size_t *nr);

/*
 * Every entry of the hash map fd as records of rec_size bytes: the key at
 * offset 0, the value at val_off. An entry deleted during the walk is
 * skipped. 0 or -errno.
 */
int bpfdump__map(int fd, size_t key_size, size_t val_off, size_t rec_size, void **out, size_t *nr);

#endif /* KHBPF_BPFDUMP_H */
