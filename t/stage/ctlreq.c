/*
 * ctlreq - send one request line to decod's control socket and print the
 * reply; a test helper independent of decoctl.  Exit 1 if no answer.
 *   ctlreq ipc:///run/decod/control.ipc stages
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

int
main(int argc, char **argv)
{
	nng_socket s;
	char *reply;
	size_t len;
	int rv;

	if (argc < 3) {
		fprintf(stderr, "usage: ctlreq ADDR REQUEST...\n");
		return 2;
	}
	if ((rv = nng_req0_open(&s)) != 0 ||
	    (rv = nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 3000)) != 0 ||
	    (rv = nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, 3000)) != 0 ||
	    (rv = nng_dial(s, argv[1], NULL, 0)) != 0 ||
	    (rv = nng_send(s, argv[2], strlen(argv[2]), 0)) != 0 ||
	    (rv = nng_recv(s, &reply, &len, NNG_FLAG_ALLOC)) != 0) {
		fprintf(stderr, "ctlreq: %s\n", nng_strerror(rv));
		return 1;
	}
	printf("%.*s\n", (int)len, reply);
	nng_free(reply, len);
	nng_close(s);
	return 0;
}
