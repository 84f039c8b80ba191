// ESLint's recommended rules, the React hooks rules, and the shape of the tree
// (bulletproof-react): imports flow shared -> features -> app, features do not
// import each other, and no module imports itself back through a cycle.
import { readdirSync } from "node:fs";
import js from "@eslint/js";
import importPlugin from "eslint-plugin-import";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";

const FEATURES = readdirSync(new URL("./src/features", import.meta.url), {
  withFileTypes: true,
})
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

const SHARED = [
  "./src/components",
  "./src/config",
  "./src/hooks",
  "./src/lib",
  "./src/utils",
];

export default [
  { ignores: ["node_modules/", ".parcel-cache/"] },
  js.configs.recommended,
  reactHooks.configs.flat["recommended-latest"] ??
    reactHooks.configs["recommended-latest"],
  {
    files: ["**/*.{js,jsx}"],
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "module",
      parserOptions: { ecmaFeatures: { jsx: true } },
      globals: { ...globals.browser },
    },
  },
  {
    files: ["src/**/*.{js,jsx}"],
    plugins: { import: importPlugin },
    settings: {
      "import/resolver": { node: { extensions: [".js", ".jsx"] } },
    },
    rules: {
      "import/no-restricted-paths": [
        "error",
        {
          zones: [
            // a feature imports only itself and shared code: compose features in app/
            ...FEATURES.map((feature) => ({
              target: `./src/features/${feature}`,
              from: "./src/features",
              except: [`./${feature}`],
              message:
                "Features do not import each other: compose them in app/.",
            })),
            {
              target: "./src/features",
              from: "./src/app",
              message: "Features do not import the app.",
            },
            {
              target: SHARED,
              from: ["./src/features", "./src/app"],
              message: "Shared code does not import features or the app.",
            },
          ],
        },
      ],
      "import/no-cycle": "error",
    },
  },
  {
    files: ["scripts/**", "*.config.js"],
    languageOptions: { globals: { ...globals.node } },
  },
];
