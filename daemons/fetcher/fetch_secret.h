/*
 * fetch_secret - reading a credential named by spec.<source>.secret: a file
 * in secrets_dir, or a folder there holding one file per key (a Kubernetes
 * Secret mounted as a volume).  The caller wipes what it got.
 */
#ifndef DECOD_FETCH_SECRET_H
#define DECOD_FETCH_SECRET_H

/*
 * fetch_secret_read - the content of path, or of path/key when path is a
 * folder, with trailing white space removed; NULL (errno set) when it
 * cannot be read or is over 64 KiB.  Free it with fetch_secret_free.
 */
char *fetch_secret_read(const char *path, const char *key);

/* fetch_secret_free - wipe and free s; NULL is fine */
void fetch_secret_free(char *s);

#endif
