/* SPDX-License-Identifier: MIT */
/*
 * json-c trees whose large arrays are made an element at a time: a lazy
 * array builds each element from the caller's C data as its text is made
 * and frees it, and jsonstream__write sends the text of such a tree to a
 * file as it goes, so neither the elements nor the whole text are ever in
 * memory at once. Either way the text is byte for byte json-c's own for
 * the same tree built whole.
 */
#ifndef KHBPF_JSONSTREAM_H
#define KHBPF_JSONSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

/* Element i of a lazy array, a new object (NULL or *err set: ENOMEM). */
typedef struct json_object *(*jsonstream_build_fn)(const void *ctx, size_t i, int *err);

/* A lazy array of nr elements; ctx must outlive it. NULL on ENOMEM. */
struct json_object *jsonstream__lazy_array(const void *ctx, size_t nr, jsonstream_build_fn build);

/* Elements of an array, lazy or not (0 for anything else). */
size_t jsonstream__length(struct json_object *arr);

/*
 * obj's text in json-c layout flags, then a newline if asked, written to
 * fd; lazy arrays anywhere in obj are made and written an element at a
 * time. 0 or -errno (-ENOMEM when an element or the tree's text could not
 * be made); on error part of the text may have been written.
 */
int jsonstream__write(struct json_object *obj, int flags, bool newline, int fd);

#endif /* KHBPF_JSONSTREAM_H */
