/* "common/curl_epoll.h" is common/base/curl_epoll.h: the spelling stays, the file lives in its layer */
#include "../../common/base/curl_epoll.h"
