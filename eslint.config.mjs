// @ts-check
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'models/**', 'test-artifacts/**', '**/*.js', '**/*.mjs'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'separate-type-imports' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  // The house's floors (docs/architecture.md, "Front doors"): each door under apps/api/src/openai/
  // stands beside the others and uses only what they share (../common); the pipeline beneath
  // serves every door and imports none.
  {
    files: ['apps/api/src/openai/*/**/*.ts'],
    ignores: ['apps/api/src/openai/common/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^\\.\\./(?!common/|\\.\\./)', message: 'A front door imports no other door: move what both need to openai/common/.' }] },
      ],
    },
  },
  {
    files: ['apps/api/src/openai/common/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^\\.\\./(?!\\.\\./)', message: 'What the doors share imports no door.' }] }],
    },
  },
  {
    files: ['apps/api/src/pipeline/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '/openai/', message: 'The pipeline serves every front door and imports none of them.' }] }],
    },
  },
);
