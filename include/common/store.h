/* "common/store.h" is common/store/store.h: the spelling stays, the file lives in its layer */
#include "../../common/store/store.h"
