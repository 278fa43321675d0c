// The stylesheet is imported for esbuild to bundle; it has no exports.
declare module '*.css';
