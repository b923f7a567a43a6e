/* "common/sync_group.h" is common/base/sync_group.h: the spelling stays, the file lives in its layer */
#include "../../common/base/sync_group.h"
