/**
 * The pages a live lane listed at once through a same-instant group (group-read.ts listGroupPages) beyond the
 * one its page took: handed to the lane's next pages in order, so their cursors were used while young and
 * each page is still prepared and committed on its own.
 *
 * Contract: `take(request)` hands over the first page held when it was listed with exactly `request` (the
 * cursor the page before it handed on), and forgets everything held otherwise: the lane moved elsewhere (a
 * restart from its watermark, an adopted offset, a reset), and what was listed ahead no longer follows.
 * `hold` replaces what is held. Memory: at most a piece of the group (lanes.groupPieceSize calls new to the
 * boundary) and the duplicates listed before it.
 */
import type { ListedAt } from './group-read.js';
import type { ListedPage, PageRequest } from '../ports.js';
import { samePageRequest } from '../location/read-ahead.js';

export class ListedPages {
  private pages: ListedAt[] = [];

  hold(pages: ListedAt[]): void {
    this.pages = pages;
  }

  take(request: PageRequest): ListedPage | null {
    const head = this.pages[0];
    if (head !== undefined && samePageRequest(head.request, request)) {
      this.pages.shift();
      return head.listed;
    }
    if (this.pages.length > 0) this.pages = [];
    return null;
  }

  /** How many pages are held (status, tests). */
  get size(): number {
    return this.pages.length;
  }
}
