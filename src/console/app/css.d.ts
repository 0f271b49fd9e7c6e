/** Stylesheets imported for their side effect: esbuild bundles them into assets/app.css. */
declare module '*.css';
