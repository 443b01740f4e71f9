/*
 * status.h - the one set of return codes used across aisd.
 *
 * Functions that can fail return one of these. The HTTP status of a request
 * lives in its response, never in a return code.
 */
#ifndef AISD_STATUS_H
#define AISD_STATUS_H

enum {
	AIS_OK = 0,     /* done, go on */
	AIS_ERR = -1,   /* failed; errno or an error message says why */
	AIS_AGAIN = -2, /* not now: call again when the resource is ready */
	AIS_DONE = 1,   /* finished; nothing more will come (end of stream) */
};

#endif
