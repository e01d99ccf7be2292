/** The part of the `mjml` package emk uses (it ships no types). */
declare module 'mjml' {
  interface MjmlOptions {
    validationLevel?: 'strict' | 'soft' | 'skip';
    ignoreIncludes?: boolean;
    keepComments?: boolean;
    minify?: boolean;
  }
  interface MjmlResult {
    html: string;
    errors: Array<{ line: number; message: string; tagName: string }>;
  }
  export default function mjml2html(source: string, options?: MjmlOptions): Promise<MjmlResult>;
}
