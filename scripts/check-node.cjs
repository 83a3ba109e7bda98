// Runs before the build and the tests (npm's prebuild / pretest): the scripts are TypeScript files
// run by Node itself, which works from Node.js 22.18 on. On an older Node, one clear line instead
// of an ERR_UNKNOWN_FILE_EXTENSION stack trace. Plain CommonJS, so that any Node can run it.
'use strict';
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    'context-guard needs Node.js 22.18 or later (it runs its .ts scripts with Node itself); this is Node ' +
      process.versions.node +
      '. Install Node 24 (https://nodejs.org/en/download, or `nvm install 24`) and run the command again.',
  );
  process.exit(1);
}
