/**
 * The pages a live lane listed at once through a same-instant group (group-read.ts listGroupPages) beyond the
 * one its page took: handed to the lane's next pages, so their cursors were used while young and each page
 * is still prepared and committed on its own.
 *
 * Contract: `take(request)` hands over the page held that was listed with exactly `request`, a cursor the
 * page before it handed on, and keeps every page held: a page whose prepare or commit failed asks for its
 * listing again, while the page after it may already have been taken to be read ahead. Any other request
 * forgets everything held: a first page (a new traversal, a restart from the lane's watermark, which a held
 * page listed before the group was published must not answer) or a cursor listed after the pages held (the
 * lane moved past them, or elsewhere: an adopted offset, a reset). `hold` replaces what is held. Memory: at
 * most a piece of the group (lanes.groupPieceSize calls new to the boundary) and the duplicates listed before
 * it, until the lane's listing passes them.
 */
import type { ListedAt } from './group-read.js';
import type { ListedPage, PageRequest } from '../ports.js';
import { samePageRequest } from '../location/read-ahead.js';

export class ListedPages {
  private pages: readonly ListedAt[] = [];

  hold(pages: readonly ListedAt[]): void {
    this.pages = pages;
  }

  take(request: PageRequest): ListedPage | null {
    if (request.kind === 'next') {
      const held = this.pages.find((page) => samePageRequest(page.request, request));
      if (held !== undefined) return held.listed;
    }
    if (this.pages.length > 0) this.pages = [];
    return null;
  }
}
