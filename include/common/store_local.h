/* "common/store_local.h" is common/store/store_local.h: the spelling stays, the file lives in its layer */
#include "../../common/store/store_local.h"
