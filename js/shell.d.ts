// Type declarations for hilodb/shell: the app shell's service worker.

/**
 * Registers the service worker at `url` (default `'/hilodb-sw.js'`: a copy
 * of the package's `sw.js` in the app's public root) and resolves once it
 * controls the page and keeps what the page has loaded, with the package's
 * own files: from then on a reload works without the network. Resolves to
 * the number of files kept now (0 where there are no service workers).
 */
export declare function registerShell(url?: string | URL, options?: RegistrationOptions): Promise<{ kept: number }>;
