/* "common/store_impl.h" is common/store/store_impl.h: the spelling stays, the file lives in its layer */
#include "../../common/store/store_impl.h"
