/* "common/store_etcd.h" is common/store/store_etcd.h: the spelling stays, the file lives in its layer */
#include "../../common/store/store_etcd.h"
