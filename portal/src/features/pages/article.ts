/** A section of a content page: a heading and any of paragraphs, a list, a code sample. */
export interface ArticleSection {
  heading?: string;
  paragraphs?: string[];
  bullets?: string[];
  code?: string;
}

/** A content page rendered by views/pages/article.ejs. */
export interface Article {
  title: string;
  lead: string;
  sections: ArticleSection[];
}
