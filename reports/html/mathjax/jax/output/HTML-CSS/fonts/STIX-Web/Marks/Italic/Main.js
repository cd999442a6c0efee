/*
 *  /MathJax-v2/jax/output/HTML-CSS/fonts/STIX-Web/Marks/Italic/Main.js
 *
 *  Copyright (c) 2009-2018 The MathJax Consortium
 *
 *  Licensed under the Apache License, Version 2.0 (the "License");
 *  you may not use this file except in compliance with the License.
 *  You may obtain a copy of the License at
 *
 *      http://www.apache.org/licenses/LICENSE-2.0
 *
 *  Unless required by applicable law or agreed to in writing, software
 *  distributed under the License is distributed on an "AS IS" BASIS,
 *  WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 *  See the License for the specific language governing permissions and
 *  limitations under the License.
 */

MathJax.OutputJax["HTML-CSS"].FONTDATA.FONTS["STIXMathJax_Marks-italic"]={directory:"Marks/Italic",family:"STIXMathJax_Marks",style:"italic",testString:"\u00A0\u02B0\u02B1\u02B2\u02B3\u02B4\u02B5\u02B6\u02B7\u02B8\u02BB\u02C0\u02C1\u02DB\u02DD",32:[0,0,250,0,0],160:[0,0,250,0,0],688:[838,-326,378,7,391],689:[838,-326,378,7,414],690:[851,-199,300,44,350],691:[690,-345,320,2,320],692:[690,-345,320,0,318],693:[690,-163,320,0,335],694:[684,-345,390,6,462],695:[690,-327,500,15,515],696:[693,-202,330,16,357],699:[686,-443,333,79,236],704:[690,-295,326,30,307],705:[690,-295,326,23,343],731:[40,169,333,-20,200],733:[664,-494,333,93,486],736:[684,-218,315,23,335],737:[837,-333,220,41,214],738:[691,-335,300,16,290],739:[691,-333,380,4,379],740:[847,-333,318,8,345],748:[70,147,320,15,305],749:[665,-507,405,10,395],759:[-113,220,333,-94,233],8208:[257,-191,333,49,282],8209:[257,-191,333,49,282],8210:[258,-192,500,-8,508],8218:[101,129,333,44,183],8219:[666,-436,333,169,290],8222:[101,129,556,57,405],8223:[666,-436,556,169,499],8226:[444,-59,523,70,455],8240:[706,19,1117,80,1067],8241:[706,19,1479,80,1429],8249:[403,-37,333,51,281],8250:[403,-37,333,52,282],8400:[760,-627,0,-453,-17],8401:[760,-627,0,-426,10],8402:[662,156,0,-300,-234],8406:[760,-548,0,-453,-17],8411:[622,-523,0,-453,44],8412:[622,-523,0,-582,114],8413:[725,221,0,-723,223],8417:[760,-548,0,-453,25],8420:[1023,155,0,-970,490],8421:[662,156,0,-430,-24],8422:[662,156,0,-351,-86],8423:[725,178,0,-595,221],8424:[-119,218,0,-462,35],8425:[681,-538,0,-478,55],8426:[419,-87,0,-793,153],8428:[-119,252,0,27,463],8429:[-119,252,0,27,463],8430:[-40,252,0,-453,-17],8431:[-40,252,0,-453,-17]};MathJax.Callback.Queue(["initFont",MathJax.OutputJax["HTML-CSS"],"STIXMathJax_Marks-italic"],["loadComplete",MathJax.Ajax,MathJax.OutputJax["HTML-CSS"].fontDir+"/Marks/Italic/Main.js"]);
