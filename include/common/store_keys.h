/* "common/store_keys.h" is common/store/store_keys.h: the spelling stays, the file lives in its layer */
#include "../../common/store/store_keys.h"
