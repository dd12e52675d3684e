// In the repository (and in a packed package): the integrations' shared runtime code, the kit's
// runtime-common.mjs (found by ../lib/kit.mjs). A patch installs that file itself under this name.
import { kitModule } from '../lib/kit.mjs'

export const { envDelta, taskControlOptions, startErrorText, wholeAmount, TIME_UNITS } = await kitModule('runtime-common.mjs')
